// The official JavaScript SDK's ServiceBusAdministrationClient (@azure/service-bus, pinned in
// package.json) against the fake namespace's administration API:
// `node admin.mjs <connection string of the HTTP port> <one with a wrong key> <counted queue>`.
// 7.9.5 always builds https:// URLs (its getUrl) and passes no user policies to its pipeline;
// the policy below, added to the client's pipeline, sends them as http:// to the fake's plain
// port, as a user does against the emulator. Prints one JSON object on stdout:
// scenario name -> what it observed, or {"error": {name, code, message}} when it threw.
// tests/js/test_js_admin.py starts the fake, sends the counted queue's messages through AMQP
// first, and checks the output.
import { ServiceBusAdministrationClient } from "@azure/service-bus";

const [connectionString, wrongKeyConnectionString, countedQueue] = process.argv.slice(2);

const plainHttp = {
  name: "plainHttp",
  async sendRequest(request, next) {
    request.url = request.url.replace(/^https:/, "http:");
    request.allowInsecureConnection = true;
    return next(request);
  },
};

function adminClient(conn = connectionString) {
  const client = new ServiceBusAdministrationClient(conn, { retryOptions: { maxRetries: 0 } });
  client.pipeline.addPolicy(plainHttp, { phase: "Serialize" });
  return client;
}

function described(error) {
  return { name: error.name, code: error.code ?? null, statusCode: error.statusCode ?? null,
           message: String(error.message) };
}

async function errorOf(action) {
  try {
    await action();
  } catch (error) {
    return described(error);
  }
  return null;
}

async function all(iterator) {
  const out = [];
  for await (const item of iterator) out.push(item);
  return out;
}

const counts = (p) => ({
  active: p.activeMessageCount, deadLetter: p.deadLetterMessageCount,
  scheduled: p.scheduledMessageCount, transfer: p.transferMessageCount,
  transferDeadLetter: p.transferDeadLetterMessageCount, total: p.totalMessageCount,
  sizeInBytes: p.sizeInBytes,
});

const scenarios = {
  async namespace(client) {
    const ns = await client.getNamespaceProperties();
    return { name: ns.name, sku: ns.messagingSku, created: ns.createdAt instanceof Date };
  },

  async queues(client) {
    const created = await client.createQueue("js-admin-q", {
      lockDuration: "PT30S", maxDeliveryCount: 3, requiresSession: false,
      deadLetteringOnMessageExpiration: true, defaultMessageTimeToLive: "P1D",
      userMetadata: "made by js",
    });
    const duplicate = await errorOf(() => client.createQueue("js-admin-q"));
    const fetched = await client.getQueue("js-admin-q");
    fetched.maxDeliveryCount = 7;
    fetched.lockDuration = "PT45S";
    const updated = await client.updateQueue(fetched);
    for (const name of ["js-page-1", "js-page-2", "js-page-3"]) await client.createQueue(name);
    const pages = [];
    for await (const page of client.listQueues().byPage({ maxPageSize: 2 })) {
      pages.push(page.map((q) => q.name));
    }
    const runtime = await client.getQueueRuntimeProperties("js-admin-q");
    const exists = await client.queueExists("js-admin-q");
    for (const name of ["js-page-1", "js-page-2", "js-page-3"]) await client.deleteQueue(name);
    await client.deleteQueue("js-admin-q");
    return {
      created: { name: created.name, lockDuration: created.lockDuration,
                 maxDeliveryCount: created.maxDeliveryCount,
                 deadLettering: created.deadLetteringOnMessageExpiration,
                 ttl: created.defaultMessageTimeToLive, userMetadata: created.userMetadata,
                 status: created.status },
      duplicate,
      updated: { lockDuration: updated.lockDuration, maxDeliveryCount: updated.maxDeliveryCount },
      pages,
      runtime: { name: runtime.name, ...counts(runtime),
                 dates: [runtime.createdAt, runtime.modifiedAt, runtime.accessedAt]
                   .every((d) => d instanceof Date && !isNaN(d)) },
      exists,
      existsAfterDelete: await client.queueExists("js-admin-q"),
      getMissing: await errorOf(() => client.getQueue("js-admin-q")),
      deleteMissing: await errorOf(() => client.deleteQueue("js-admin-q")),
    };
  },

  async topicsAndSubscriptions(client) {
    await client.createQueue("js-forward-target");
    const topic = await client.createTopic("js-admin-t", { requiresDuplicateDetection: true,
                                                           duplicateDetectionHistoryTimeWindow: "PT5M" });
    topic.defaultMessageTimeToLive = "PT1H";
    const updatedTopic = await client.updateTopic(topic);
    const subscription = await client.createSubscription("js-admin-t", "s1", {
      maxDeliveryCount: 4, forwardTo: "js-forward-target",
      defaultRuleOptions: { name: "only-red", filter: { sqlExpression: "color = 'red'" } },
    });
    await client.createSubscription("js-admin-t", "s2", { requiresSession: true });
    const fetched = await client.getSubscription("js-admin-t", "s1");
    fetched.maxDeliveryCount = 9;
    const updated = await client.updateSubscription(fetched);
    const listed = (await all(client.listSubscriptions("js-admin-t"))).map(
      (s) => [s.subscriptionName, s.requiresSession]);
    const runtime = await all(client.listSubscriptionsRuntimeProperties("js-admin-t"));
    const topicRuntime = await client.getTopicRuntimeProperties("js-admin-t");
    const topics = (await all(client.listTopics())).map((t) => t.name);
    const rulesOfS1 = (await all(client.listRules("js-admin-t", "s1"))).map((r) => r.name);
    await client.deleteSubscription("js-admin-t", "s2");
    const missingSubscription = await errorOf(() => client.getSubscription("js-admin-t", "s2"));
    await client.deleteTopic("js-admin-t");
    await client.deleteQueue("js-forward-target");
    return {
      topic: { name: topic.name, duplicateDetection: topic.requiresDuplicateDetection,
               window: topic.duplicateDetectionHistoryTimeWindow },
      updatedTopicTtl: updatedTopic.defaultMessageTimeToLive,
      subscription: { topic: subscription.topicName, name: subscription.subscriptionName,
                      maxDeliveryCount: subscription.maxDeliveryCount,
                      forwardTo: subscription.forwardTo, status: subscription.status },
      updatedMaxDeliveryCount: updated.maxDeliveryCount,
      listed,
      runtime: runtime.map((r) => [r.subscriptionName, r.activeMessageCount]),
      topicRuntime: { name: topicRuntime.name, subscriptionCount: topicRuntime.subscriptionCount },
      topics,
      rulesOfS1,
      missingSubscription,
      topicExistsAfterDelete: await client.topicExists("js-admin-t"),
    };
  },

  async rules(client) {
    await client.createTopic("js-rules-t");
    await client.createSubscription("js-rules-t", "s");
    const sql = await client.createRule("js-rules-t", "s", "sql",
      { sqlExpression: "color = 'blue'" }, { sqlExpression: "SET priority = 'high'" });
    const correlation = await client.createRule("js-rules-t", "s", "correlation", {
      correlationId: "c-1", subject: "orders", applicationProperties: { region: "eu", size: 3 },
    });
    const fetched = await client.getRule("js-rules-t", "s", "sql");
    fetched.filter = { sqlExpression: "color = 'green'" };
    const updated = await client.updateRule("js-rules-t", "s", fetched);
    const listed = (await all(client.listRules("js-rules-t", "s"))).map((r) => r.name);
    const duplicate = await errorOf(() => client.createRule("js-rules-t", "s", "sql",
      { sqlExpression: "1=1" }));
    await client.deleteRule("js-rules-t", "s", "sql");
    const missing = await errorOf(() => client.getRule("js-rules-t", "s", "sql"));
    const exists = await client.ruleExists("js-rules-t", "s", "correlation");
    await client.deleteTopic("js-rules-t");
    return {
      sql: { name: sql.name, filter: sql.filter.sqlExpression, action: sql.action.sqlExpression },
      correlation: { name: correlation.name, correlationId: correlation.filter.correlationId,
                     subject: correlation.filter.subject,
                     properties: correlation.filter.applicationProperties },
      updated: updated.filter.sqlExpression,
      listed, duplicate, missing, exists,
    };
  },

  async counts(client) {
    const queue = await client.getQueueRuntimeProperties(countedQueue);
    const listed = (await all(client.listQueuesRuntimeProperties()))
      .filter((q) => q.name === countedQueue).map(counts);
    return { queue: counts(queue), listed };
  },

  async wrongKey() {
    return { error: await errorOf(() => adminClient(wrongKeyConnectionString).getQueue("x")) };
  },
};

const results = {};
const client = adminClient();
for (const [name, scenario] of Object.entries(scenarios)) {
  try {
    results[name] = await scenario(client);
  } catch (error) {
    results[name] = { error: described(error) };
  }
}
console.log(JSON.stringify(results));

// The official JavaScript SDK (@azure/service-bus, pinned in package.json) against the fake
// namespace:
// `node scenarios.mjs <connection string> <wrong-key one> <one with a SAS token for js-token
// that expires a few seconds after the start>`.
// Runs every scenario in this one process (one Node start-up for the whole suite; the ones
// that wait on real time run concurrently) and prints one JSON object on stdout: scenario
// name -> what it observed, or {"error": {name, code, message}} when it threw.
// tests/js/test_js_sdk.py starts the fake with the entities named here and checks the output.
import { ServiceBusClient } from "@azure/service-bus";

const [connectionString, wrongKeyConnectionString, shortTokenConnectionString] =
  process.argv.slice(2);
const WAIT = { maxWaitTimeInMs: 2000 };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const seq = (message) => message.sequenceNumber.toNumber();

function described(error) {
  return { name: error.name, code: error.code ?? null, message: String(error.message) };
}

async function withClient(body, conn = connectionString) {
  const client = new ServiceBusClient(conn, { retryOptions: { maxRetries: 0, timeoutInMs: 5000 } });
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

async function errorOf(action) {
  try {
    await action();
  } catch (error) {
    return described(error);
  }
  return null;
}

const scenarios = {
  // Single, array and batch sends; receive-and-delete; the batch limit is the link's.
  async sending(client) {
    const sender = client.createSender("js-send");
    await sender.sendMessages({ body: "single", messageId: "m-single" });
    await sender.sendMessages([{ body: "array-1" }, { body: "array-2" }]);
    const batch = await sender.createMessageBatch();
    for (const body of ["batch-1", "batch-2", "batch-3"]) {
      if (!batch.tryAddMessage({ body })) throw new Error(`batch refused ${body}`);
    }
    await sender.sendMessages(batch);
    const receiver = client.createReceiver("js-send", { receiveMode: "receiveAndDelete" });
    const received = [];
    while (received.length < 6) {
      const got = await receiver.receiveMessages(6 - received.length, WAIT);
      if (got.length === 0) break;
      received.push(...got);
    }
    const tooBig = await errorOf(() => sender.sendMessages({ body: "x".repeat(300 * 1024) }));
    return {
      batchMaxSize: batch.maxSizeInBytes,
      batchCount: batch.count,
      bodies: received.map((m) => m.body),
      sequenceNumbers: received.map(seq),
      idOfArrayMessage: received[1]?.messageId ?? null,
      tooBig,
    };
  },

  // Peek-lock: complete, abandon (redelivered with delivery count 1), defer and receive it
  // by sequence number, dead-letter and read the dead-letter queue.
  async settlement(client) {
    const sender = client.createSender("js-settle");
    await sender.sendMessages(["complete", "abandon", "defer", "dead"].map(
      (body) => ({ body, messageId: body })));
    const receiver = client.createReceiver("js-settle");
    const got = await receiver.receiveMessages(4, WAIT);
    const byBody = Object.fromEntries(got.map((m) => [m.body, m]));
    await receiver.completeMessage(byBody.complete);
    await receiver.abandonMessage(byBody.abandon);
    await receiver.deferMessage(byBody.defer);
    await receiver.deadLetterMessage(byBody.dead, {
      deadLetterReason: "bad", deadLetterErrorDescription: "really bad" });
    const again = await receiver.receiveMessages(1, WAIT);
    await receiver.completeMessage(again[0]);
    const deferred = await receiver.receiveDeferredMessages([byBody.defer.sequenceNumber]);
    await receiver.completeMessage(deferred[0]);
    const dlq = client.createReceiver("js-settle", { subQueueType: "deadLetter" });
    const dead = await dlq.receiveMessages(1, WAIT);
    await dlq.completeMessage(dead[0]);
    return {
      firstBodies: got.map((m) => m.body),
      abandoned: { body: again[0].body, deliveryCount: again[0].deliveryCount },
      deferred: deferred.map((m) => ({ body: m.body, state: m.state })),
      deadLettered: dead.map((m) => ({
        body: m.body, reason: m.deadLetterReason, description: m.deadLetterErrorDescription,
        source: m.deadLetterSource ?? null })),
    };
  },

  // Sessions: a named session, its state and lock renewal, then the next available one.
  async sessions(client) {
    const sender = client.createSender("js-sessions");
    await sender.sendMessages([
      { body: "s1-a", sessionId: "s1" }, { body: "s2-a", sessionId: "s2" },
      { body: "s1-b", sessionId: "s1" }]);
    const s1 = await client.acceptSession("js-sessions", "s1");
    const first = await s1.receiveMessages(2, WAIT);
    for (const message of first) await s1.completeMessage(message);
    await s1.setSessionState("state-of-s1");
    const state = await s1.getSessionState();
    const before = s1.sessionLockedUntilUtc.getTime();
    await sleep(50);
    const renewed = await s1.renewSessionLock();
    await s1.close();
    const next = await client.acceptNextSession("js-sessions");
    const rest = await next.receiveMessages(1, WAIT);
    await next.completeMessage(rest[0]);
    return {
      s1Bodies: first.map((m) => m.body),
      state: state === undefined || state === null ? null : Buffer.from(state).toString(),
      renewedLater: renewed.getTime() > before,
      nextSession: next.sessionId,
      nextBodies: rest.map((m) => m.body),
    };
  },

  // Scheduling as the first thing a new client does (its token is for <entity>/$management).
  async scheduling() {
    return withClient(async (client) => {
      const sender = client.createSender("js-schedule");
      const at = new Date(Date.now() + 3600_000);
      const numbers = await sender.scheduleMessages([{ body: "later-1" }, { body: "later-2" }], at);
      const receiver = client.createReceiver("js-schedule");
      const peeked = await receiver.peekMessages(10, { fromSequenceNumber: numbers[0] });
      await sender.cancelScheduledMessages([numbers[0]]);
      const afterCancel = await receiver.peekMessages(10, { fromSequenceNumber: numbers[0] });
      return {
        sequenceNumbers: numbers.map((n) => n.toNumber()),
        peeked: peeked.map((m) => ({ body: m.body, state: m.state })),
        afterCancel: afterCancel.map((m) => m.body),
      };
    });
  },

  // The rule manager over AMQP, again as the first thing a new client does.
  async rules() {
    return withClient(async (client) => {
      const manager = client.createRuleManager("js-topic", "js-sub");
      await manager.createRule("red", { sqlExpression: "color = 'red'" });
      await manager.createRule("by-subject", { subject: "orders" });
      const listed = [];
      for await (const rule of manager.listRules()) listed.push(rule);
      await manager.deleteRule("red");
      const missing = await errorOf(() => manager.deleteRule("no-such-rule"));
      const after = [];
      for await (const rule of manager.listRules()) after.push(rule.name);
      return {
        listed: listed.map((r) => ({
          name: r.name, filter: r.filter.sqlExpression ?? r.filter.subject ?? null })),
        after,
        missing,
      };
    });
  },

  // Lock renewal in real time (2 s locks): renewed twice past the first expiry, then completed.
  async lockRenewal(client) {
    await client.createSender("js-renew").sendMessages({ body: "renew-me", messageId: "r" });
    const receiver = client.createReceiver("js-renew", { maxAutoLockRenewalDurationInMs: 0 });
    const [message] = await receiver.receiveMessages(1, WAIT);
    const first = message.lockedUntilUtc.getTime();
    await sleep(1200);
    const second = (await receiver.renewMessageLock(message)).getTime();
    await sleep(1200);
    const third = (await receiver.renewMessageLock(message)).getTime();
    await receiver.completeMessage(message);
    return { first, second, third };
  },

  // A lock that expires in real time (1 s) is offered again, at once, to the receiver that
  // is already waiting on the same link with credit.
  async lockExpiry(client) {
    await client.createSender("js-expiry").sendMessages({ body: "expire-me", messageId: "e" });
    // no automatic lock renewal, so the lock does expire
    const receiver = client.createReceiver("js-expiry", { maxAutoLockRenewalDurationInMs: 0 });
    const deliveries = [];
    const started = Date.now();
    await new Promise((resolve, reject) => {
      const subscription = receiver.subscribe({
        async processMessage(message) {
          deliveries.push({ deliveryCount: message.deliveryCount, at: Date.now() - started });
          if (deliveries.length === 2) {
            await receiver.completeMessage(message);
            await subscription.close();
            resolve();
          }
        },
        async processError(args) {
          reject(args.error);
        },
      }, { autoCompleteMessages: false, maxConcurrentCalls: 2 });
      setTimeout(() => reject(new Error(`only ${deliveries.length} deliveries in 8 s`)), 8000);
    });
    return { deliveries };
  },

  // A fixed SAS token that expires in real time: the fake detaches the receiver's link and
  // refuses the expired token when the SDK puts it again, so the receiver reports it.
  async tokenExpiry() {
    return withClient(async (client) => {
      const receiver = client.createReceiver("js-token", { receiveMode: "receiveAndDelete" });
      const started = Date.now();
      const reported = await new Promise((resolve) => {
        const subscription = receiver.subscribe({
          async processMessage() {},
          async processError(args) {
            await subscription.close();
            resolve(described(args.error));
          },
        });
        setTimeout(() => resolve(null), 8000);
      });
      return { reported, afterMs: Date.now() - started };
    }, shortTokenConnectionString);
  },

  // Authentication and addressing errors as the SDK classifies them.
  async errors() {
    const wrongKey = await withClient(
      (client) => errorOf(() => client.createSender("js-send").sendMessages({ body: "x" })),
      wrongKeyConnectionString);
    return withClient(async (client) => ({
      wrongKey,
      unknownSend: await errorOf(() => client.createSender("no-such-queue").sendMessages(
        { body: "x" })),
      unknownPeek: await errorOf(() => client.createReceiver("no-such-queue").peekMessages(1)),
    }));
  },
};

const realTime = new Set(["lockRenewal", "lockExpiry", "tokenExpiry"]);
const results = {};

async function run(name) {
  try {
    results[name] = await withClient((client) => scenarios[name](client));
  } catch (error) {
    results[name] = { error: described(error) };
  }
}

const waiting = Object.keys(scenarios).filter((name) => realTime.has(name)).map(run);
for (const name of Object.keys(scenarios).filter((name) => !realTime.has(name))) {
  await run(name);
}
await Promise.all(waiting);
process.stdout.write(JSON.stringify(results) + "\n");

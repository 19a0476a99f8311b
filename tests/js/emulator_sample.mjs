// The emulator installer's sample flow with the official JavaScript SDK, against
// `python -m fakes` (tests/js/test_emulator_sample.py starts it):
// `node emulator_sample.mjs <connection string> <HTTP base URL> <the emulator's own string>`.
// 1. wait for GET /health to answer 200, then send and receive on queue.1 over localhost;
// 2. accept the next available session of the (empty) session queue "sessions": the fake
//    waits for the receiver's time-out, then the SDK reports ServiceTimeout, which the SDK's
//    session round-robin sample takes as "no session available";
// 3. the emulator's own connection string (no port): where the SDK's socket connects (the
//    connection is refused here, so that no test binds 5672).
// Prints one JSON object on stdout: what each step observed.
import net from "node:net";
import { ServiceBusClient } from "@azure/service-bus";

const [connectionString, httpBase, emulatorConnectionString] = process.argv.slice(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForHealth() {
  const end = Date.now() + 30000;
  for (;;) {
    try {
      const response = await fetch(`${httpBase}/health`);
      if (response.status === 200) return await response.json();
    } catch (error) {
      if (Date.now() > end) throw error;
    }
    await sleep(100);
  }
}

async function sendAndReceive() {
  const client = new ServiceBusClient(connectionString);
  try {
    const sender = client.createSender("queue.1");
    await sender.sendMessages({ body: "Hello, Azure Service Bus!" });
    await sender.close();
    const receiver = client.createReceiver("queue.1");
    const received = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
    for (const message of received) await receiver.completeMessage(message);
    await receiver.close();
    return received.map((message) => message.body);
  } finally {
    await client.close();
  }
}

async function nextSessionWhenNoneHasMessages() {
  const client = new ServiceBusClient(connectionString, {
    retryOptions: { maxRetries: 0, timeoutInMs: 1500 },
  });
  const started = Date.now();
  try {
    const receiver = await client.acceptNextSession("sessions");
    await receiver.close();
    return { accepted: receiver.sessionId };
  } catch (error) {
    return { code: error.code ?? null, name: error.name, waitedMs: Date.now() - started };
  } finally {
    await client.close();
  }
}

async function portOfTheEmulatorsString() {
  const ports = [];
  const connect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function (...args) {
    // net.connect passes its arguments on normalized: [[options, callback]]
    const first = Array.isArray(args[0]) ? args[0][0] : args[0];
    const options = typeof first === "object" ? first : { port: first };
    ports.push(Number(options.port));
    process.nextTick(() => this.destroy(new Error("connection refused by the test")));
    return this;
  };
  const client = new ServiceBusClient(emulatorConnectionString, {
    retryOptions: { maxRetries: 0, timeoutInMs: 2000 },
  });
  try {
    const sender = client.createSender("queue.1");
    await sender.sendMessages({ body: "never sent" }).catch(() => undefined);
  } finally {
    net.Socket.prototype.connect = connect;
    await client.close().catch(() => undefined);
  }
  return [...new Set(ports)];
}

const health = await waitForHealth();
const received = await sendAndReceive();
const nextSession = await nextSessionWhenNoneHasMessages();
const emulatorPorts = await portOfTheEmulatorsString();
console.log(JSON.stringify({ health, received, nextSession, emulatorPorts }));
process.exit(0);

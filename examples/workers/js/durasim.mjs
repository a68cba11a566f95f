// The JavaScript client of durasim's worker protocol (docs/worker-protocol.md, version 1).
// Node 20, no dependencies. A program imports `connect`, awaits it, and then calls durasim's
// queue, store, model, timer and broker as ordinary async functions:
//
//   const c = await connect();
//   const job = await c.queue.lease();
//   const output = await c.model.infer(job);
//   await c.store.transaction(async (tx) => { ... });
//   await c.queue.ack(job);
//
// The lockstep is the client's business: durasim delivers one message (a reply, a timer, the
// start), the client hands it to the code waiting on it, lets that code run until it is blocked
// again (every promise settled), and then tells durasim `idle`. Use durasim's timer
// (`c.timer.sleep`), never setTimeout: virtual time is durasim's.

import { createInterface } from "node:readline";

// The protocol version this client speaks (docs/worker-protocol.md).
export const PROTOCOL = 1;

export class DurasimError extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

export async function connect() {
  const client = new Client();
  await client.started;
  return client;
}

class Client {
  constructor() {
    this.now = 0;
    this.lastId = 0;
    this.pending = new Map(); // call id -> {resolve, reject}
    this.ignored = new Set(); // replies nobody waits for (the keep-alive's heartbeats)
    this.keepAliveState = null;
    this.started = new Promise((resolve) => (this.resolveStart = resolve));
    const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
    const queue = [];
    let busy = false;
    const pump = async () => {
      if (busy) return;
      busy = true;
      while (queue.length > 0) {
        this.handle(JSON.parse(queue.shift()));
        // Let every continuation the message set off run (and send its calls) first.
        await new Promise((r) => setImmediate(r));
        this.write({ call: "idle" });
      }
      busy = false;
    };
    lines.on("line", (line) => {
      queue.push(line);
      pump();
    });
    // durasim closed our stdin: the run is over (or we were killed).
    lines.on("close", () => process.exit(0));

    this.queue = {
      lease: async () => this.call("queue.lease", {}),
      heartbeat: async (l) => this.call("queue.heartbeat", { job: l.job, fence: l.fence }),
      ack: async (l) => this.call("queue.ack", { job: l.job, fence: l.fence }),
      retry: async (l, error, delayMs) =>
        this.call("queue.retry", { job: l.job, fence: l.fence, error, delay_ms: delayMs }),
      fail: async (l, error, reason) =>
        this.call("queue.fail", { job: l.job, fence: l.fence, error, reason }),
      cancel: async (l, error) => this.call("queue.cancel", { job: l.job, fence: l.fence, error }),
    };
    this.model = {
      // The model's output (16 hex digits); a failure rejects with DurasimError whose code is
      // the error's name (`provider_unavailable` transient, `schema_invalid` permanent).
      infer: async (l) => (await this.call("model.infer", { job: l.job })).output,
    };
    this.timer = { sleep: async (ms) => this.call("timer.sleep", { ms }) };
    this.broker = {
      publish: async (event) => this.call("broker.publish", { event }),
      receive: async () => this.call("broker.receive", {}),
    };
    this.store = { transaction: (f) => this.transaction(f) };
  }

  get role() {
    return this.startMessage.role;
  }

  config(name) {
    return this.startMessage.config[name];
  }

  write(line) {
    process.stdout.write(JSON.stringify(line) + "\n");
  }

  send(call, args) {
    const id = ++this.lastId;
    this.write({ call, id, ...args });
    return id;
  }

  call(call, args) {
    const id = this.send(call, args);
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
  }

  handle(message) {
    if (typeof message.now === "number") this.now = message.now;
    if (message.type === "start") {
      if (message.protocol !== PROTOCOL) {
        process.stderr.write(`durasim.mjs speaks protocol ${PROTOCOL}, durasim ${message.protocol}\n`);
        process.exit(1);
      }
      this.startMessage = message;
      this.resolveStart();
      return;
    }
    const id = message.id;
    if (this.ignored.delete(id)) return;
    const k = this.keepAliveState;
    if (k && k.timer === id) {
      this.ignored.add(this.send("queue.heartbeat", { job: k.job, fence: k.fence }));
      k.timer = this.send("timer.sleep", { ms: k.every });
      return;
    }
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if (message.error) p.reject(new DurasimError(message.error.code, message.error.message));
    else p.resolve(message.ok);
  }

  // Heartbeats for `lease` every heartbeat_ms while the program waits, until stopKeepAlive().
  keepAlive(lease) {
    const every = Math.max(1, this.config("heartbeat_ms"));
    const timer = this.send("timer.sleep", { ms: every });
    this.keepAliveState = { job: lease.job, fence: lease.fence, every, timer };
  }

  stopKeepAlive() {
    if (this.keepAliveState) this.ignored.add(this.keepAliveState.timer);
    this.keepAliveState = null;
  }

  log(message) {
    return this.call("log", { message: String(message) });
  }

  // One transaction: f's reads and writes, committed when f returns, rolled back when it throws
  // (a failed write has rolled it back already; the rollback then answers no_transaction).
  async transaction(f) {
    const { tx } = await this.call("store.begin", {});
    const t = new Tx(this, tx);
    let value;
    try {
      value = await f(t);
    } catch (e) {
      await this.call("store.rollback", { tx }).catch(() => {});
      throw e;
    }
    await this.call("store.commit", { tx });
    return value;
  }
}

class Tx {
  constructor(client, id) {
    this.client = client;
    this.id = id;
  }
  // The row of `table` under `key` (a key string for results, a number for the others), or null.
  async get(table, key) {
    return (await this.client.call("store.get", { tx: this.id, table, key })).row;
  }
  // Inserts `row` and returns it as stored (an outbox row with its `event`). A row whose key
  // exists is a unique_violation (the transaction is rolled back), unless onConflict is
  // "nothing": then {inserted: false}.
  async insert(table, row, onConflict) {
    const args = { tx: this.id, table, row };
    if (onConflict) args.on_conflict = onConflict;
    return (await this.client.call("store.insert", args)).row;
  }
  async scan(table, { unpublished = false, limit } = {}) {
    return (await this.client.call("store.scan", { tx: this.id, table, unpublished, limit })).rows;
  }
  async markPublished(event) {
    return (await this.client.call("store.mark_published", { tx: this.id, event })).updated;
  }
  async delete(table, key) {
    return (await this.client.call("store.delete", { tx: this.id, table, key })).deleted;
  }
}

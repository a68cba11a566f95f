// A small document pipeline on pg-boss 10 (PostgreSQL), recorded as a durasim history: the same
// pipeline as recorders/procrastinate (one job per key, result and outbox row in one
// transaction, a relay and a consumer deduping by event id) on another stack.
//
//   node pipeline.mjs worker NAME   a pg-boss worker (polls every 0.5 s, one job at a time)
//   node pipeline.mjs supervisor    pg-boss's maintenance: expires active jobs past expire_in
//                                   (every second), which retries or fails them
//   node pipeline.mjs relay         the outbox relay and the deduping consumer
//
// DURASIM_PG: the server's socket directory. DURASIM_VARIANT: correct | plain-insert | dual-write
// (the result is committed alone and the worker then publishes the event itself, a broker call
// of 0.2 to 0.4 s later, with no outbox row) | zombie.
import { createRequire } from 'node:module'
const require = createRequire(process.env.DURASIM_NODE_MODULES + '/')
const PgBoss = require('pg-boss')
const pg = require('pg')

export const QUEUE = 'extract'
export const EXPIRE = 2 // seconds: a job's lease (expire_in); pg-boss 10 has no heartbeat
export const RETRY_LIMIT = 3 // retried while retry_count < 3: a job has at most 4 leases
export const RETRY_DELAY = 1 // seconds, exact (retry_backoff false)
const VARIANT = process.env.DURASIM_VARIANT || 'correct'
const WORK = VARIANT === 'zombie' ? [1.0, 1.5] : [0.05, 0.2]
const FAIL_RATE = 0.1

export function connection (name) {
  return { host: process.env.DURASIM_PG, user: 'postgres', database: 'postgres', application_name: name }
}

export function boss (name, opts = {}) {
  return new PgBoss({ ...connection(name), max: 3, supervise: false, schedule: false, migrate: false, ...opts })
}

export async function log (client, type, body) {
  await client.query('SELECT durasim_log($1, $2::jsonb)', [type, JSON.stringify(body)])
}

const sleep = s => new Promise(resolve => setTimeout(resolve, s * 1000))
const between = ([lo, hi]) => lo + Math.random() * (hi - lo)

async function worker (name) {
  const b = boss(name)
  b.on('error', () => {})
  await b.start()
  const client = new pg.Client(connection(name))
  await client.connect()
  await b.work(QUEUE, { pollingIntervalSeconds: 0.5, batchSize: 1 }, async ([job]) => {
    await sleep(between(WORK)) // the model call
    if (Math.random() < FAIL_RATE) throw new Error('provider unavailable')
    const { key } = job.data
    const output = Math.floor(Math.random() * 2 ** 48).toString(16)
    await client.query('BEGIN')
    try {
      const sql = VARIANT === 'plain-insert'
        ? 'INSERT INTO results (key, job, output) VALUES ($1, $2, $3) RETURNING key'
        : 'INSERT INTO results (key, job, output) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING RETURNING key'
      const inserted = (await client.query(sql, [key, job.id, output])).rowCount > 0
      if (VARIANT === 'dual-write') {
        if (inserted) await log(client, 'result_committed', { job: job.id, worker: name, key, output })
        else await log(client, 'commit_deduped', { job: job.id, worker: name, key, output })
        await client.query('COMMIT')
        if (inserted) {
          await sleep(between([0.2, 0.4])) // the broker call, outside the transaction
          await client.query('BEGIN')
          const { rows: [{ event }] } = await client.query("SELECT nextval('direct_event') AS event")
          await publish(client, { event: Number(event), key, job: job.id, output }, true)
          await client.query('COMMIT')
        }
        return
      }
      if (inserted) {
        const { rows: [{ event }] } = await client.query(
          'INSERT INTO outbox (key, job, output) VALUES ($1, $2, $3) RETURNING event', [key, job.id, output])
        await client.query('UPDATE results SET event = $1 WHERE key = $2 AND job = $3', [event, key, job.id])
        await log(client, 'result_committed', { job: job.id, worker: name, key, output, event: Number(event) })
      } else {
        const { rows: [{ event }] } = await client.query('SELECT event FROM results WHERE key = $1', [key])
        await log(client, 'commit_deduped', { job: job.id, worker: name, key, output, existing_event: Number(event) })
      }
      await client.query('COMMIT')
    } catch (e) {
      await client.query('ROLLBACK')
      throw e
    }
  })
}

async function supervisor () {
  const b = boss('supervisor', { supervise: true, maintenanceIntervalSeconds: 1 })
  b.on('error', () => {})
  await b.start()
}

// One event reaches the consumer, which applies it once per event id.
async function publish (client, { event, key, job, output }, direct = false) {
  await log(client, 'published', { event, key, job, output, ...(direct ? { direct: true } : {}) })
  const fresh = (await client.query('INSERT INTO applied VALUES ($1) ON CONFLICT DO NOTHING RETURNING event', [event])).rowCount
  if (fresh) await log(client, 'effect_applied', { event, key, job, output })
  else await log(client, 'duplicate_event', { event, key })
}

async function relay () {
  const client = new pg.Client(connection('relay'))
  await client.connect()
  for (;;) {
    await client.query('BEGIN')
    const { rows } = await client.query(
      'SELECT event, key, job, output FROM outbox WHERE NOT published ORDER BY event LIMIT 20 FOR UPDATE SKIP LOCKED')
    for (const r of rows) await publish(client, { event: Number(r.event), key: r.key, job: r.job, output: r.output })
    if (rows.length) {
      const events = rows.map(r => Number(r.event))
      await client.query('UPDATE outbox SET published = true WHERE event = ANY($1)', [events])
      await log(client, 'marked_published', { events })
    }
    await client.query('COMMIT')
    if (!rows.length) await sleep(0.05)
  }
}

const [role, name] = process.argv.slice(2)
if (role === 'worker') await worker(name)
else if (role === 'supervisor') await supervisor()
else if (role === 'relay') await relay()

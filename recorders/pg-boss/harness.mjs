// Runs the pg-boss pipeline (pipeline.mjs) on a throwaway PostgreSQL and writes the history its
// recorder (recorder.sql) kept, in durasim's history format version 2.
//
//   node harness.mjs VARIANT JOBS OUT.jsonl
//
// DURASIM_NODE_MODULES: where pg-boss is installed (.ci/run: target/recorders/pg-boss/
// node_modules). The server lives in a temporary directory on a Unix socket (no TCP), run as a
// non-root user when we are root, stopped and removed at the end. Four workers; every key is
// submitted twice (the queue's `short` policy refuses a second job of a key while the first
// waits). correct, plain-insert and dual-write SIGKILL a random worker every 0.4 to 1 s (a new one starts);
// zombie SIGSTOPs a worker 0.9 s into a job until pg-boss has expired it and another worker
// holds it, then lets it go on.
import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const [variant, jobsArg, out] = process.argv.slice(2)
const jobs = Number(jobsArg)
const WORKERS = 4
const BOUND = variant === 'zombie' ? 25 : 90 // seconds to settle before giving up
const sleep = s => new Promise(resolve => setTimeout(resolve, s * 1000))

function pgBin () {
  const root = '/usr/lib/postgresql'
  const found = fs.existsSync(root)
    ? fs.readdirSync(root).map(v => path.join(root, v, 'bin')).filter(d => fs.existsSync(path.join(d, 'initdb'))).sort()
    : []
  if (!found.length) throw new Error('no PostgreSQL found in /usr/lib/postgresql/*/bin; install it, e.g. apt-get install postgresql')
  return found[found.length - 1]
}

function serverUser () {
  if (process.getuid() !== 0) return null
  for (const u of ['postgres', 'durasim-pg']) {
    try { execFileSync('id', [u], { stdio: 'ignore' }); return u } catch {}
  }
  execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', 'durasim-pg'])
  return 'durasim-pg'
}

function runPg (user, args) {
  const [cmd, rest] = user ? ['runuser', ['-u', user, '--', ...args]] : [args[0], args.slice(1)]
  execFileSync(cmd, rest, { cwd: '/', stdio: ['ignore', 'ignore', 'pipe'] })
}

const bin = pgBin()
const user = serverUser()
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durasim-pgboss-'))
fs.chmodSync(tmp, 0o755)
if (user) execFileSync('chown', [`${user}:`, tmp])
const data = path.join(tmp, 'data')
runPg(user, [`${bin}/initdb`, '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
runPg(user, [`${bin}/pg_ctl`, '-D', data, '-l', path.join(tmp, 'server.log'), '-o',
  `-c listen_addresses='' -c unix_socket_directories='${tmp}' -c fsync=off -c synchronous_commit=off -c max_connections=80`,
  '-w', '-t', '30', 'start'])
process.env.DURASIM_PG = tmp
process.env.DURASIM_VARIANT = variant
const procs = []
try {
  await run()
} finally {
  for (const p of procs) { try { p.kill('SIGCONT'); p.kill('SIGKILL') } catch {} }
  await sleep(0.2)
  try { runPg(user, [`${bin}/pg_ctl`, '-D', data, '-m', 'immediate', '-w', 'stop']) } catch {}
  fs.rmSync(tmp, { recursive: true, force: true })
}
process.exit(0)

async function run () {
  const { boss, connection, log, QUEUE, EXPIRE, RETRY_LIMIT, RETRY_DELAY } = await import(path.join(HERE, 'pipeline.mjs'))
  const { createRequire } = await import('node:module')
  const pg = createRequire(process.env.DURASIM_NODE_MODULES + '/')('pg')
  // The schema: pg-boss's own (migrate), the queue, the recorder, the pipeline's tables.
  const setup = boss('harness', { migrate: true })
  setup.on('error', () => {})
  await setup.start()
  await setup.createQueue(QUEUE, { policy: 'short', retryLimit: RETRY_LIMIT, retryDelay: RETRY_DELAY, expireInSeconds: EXPIRE })
  const db = new pg.Client(connection('producer'))
  await db.connect()
  await db.query(fs.readFileSync(path.join(HERE, 'recorder.sql'), 'utf8'))
  await db.query(`CREATE TABLE results (key text ${variant === 'plain-insert' ? '' : 'UNIQUE'}, job uuid, output text, event bigint)`)
  await db.query('CREATE TABLE outbox (event bigserial PRIMARY KEY, key text, job uuid, output text, published boolean NOT NULL DEFAULT false)')
  await db.query('CREATE TABLE applied (event bigint PRIMARY KEY)')
  await db.query('CREATE SEQUENCE direct_event START 1000000')
  await setup.stop({ graceful: false, wait: true })
  const producer = boss('producer')
  producer.on('error', () => {})
  await producer.start()

  const start = Date.now()
  const child = (role, name) => {
    const p = spawn(process.execPath, [path.join(HERE, 'pipeline.mjs'), role, ...(name ? [name] : [])],
      { env: process.env, stdio: ['ignore', 'ignore', fs.openSync(path.join(tmp, `${name || role}.log`), 'w')] })
    procs.push(p)
    return p
  }
  let generation = 0
  const workers = new Map()
  const newWorker = () => { const n = `w${++generation}`; workers.set(n, child('worker', n)) }
  for (let i = 0; i < WORKERS; i++) newWorker()
  child('supervisor')
  child('relay')
  await sleep(1)

  const tenants = ['Acme_Corp', 'globex', 'INITECH']
  const keys = Array.from({ length: jobs }, (_, i) => {
    const tenant = tenants[i % 3]
    return { tenant, key: `${tenant}:https://docs.example/${i}/scan.pdf:${i % 2 ? 'v2' : '2024-06-01'}`, content: (i * 2654435761 % 2 ** 32).toString(16) }
  })
  const submits = keys.flatMap(k => [k, k]).sort(() => Math.random() - 0.5)
  let nextFault = Date.now() + 1000
  for (const { tenant, key, content } of submits) {
    const id = await producer.send(QUEUE, { tenant, key, content }, { singletonKey: key })
    if (id === null) {
      // Refused while waiting: the submit resolved to the waiting job, locked so that no worker
      // takes it before the record (if one did, nothing is recorded).
      await db.query('BEGIN')
      const { rows } = await db.query(
        "SELECT id FROM pgboss.job WHERE name = $1 AND singleton_key = $2 AND state = 'created' FOR UPDATE", [QUEUE, key])
      if (rows.length) await log(db, 'enqueue_deduped', { tenant, key, operation: QUEUE, content, existing: rows[0].id })
      await db.query('COMMIT')
    }
    await sleep(Math.random() * 0.04)
    if (variant !== 'zombie' && Date.now() >= nextFault) {
      const names = [...workers.keys()]
      const name = names[Math.floor(Math.random() * names.length)]
      workers.get(name).kill('SIGKILL')
      workers.delete(name)
      await log(db, 'worker_crashed', { worker: name })
      newWorker()
      nextFault = Date.now() + 400 + Math.random() * 600
    }
  }
  if (variant === 'dual-write') {
    // Beside the random kills, one worker is killed between its result's COMMIT and its broker
    // call: the result no event announces (the random kills land there only now and then).
    let killed = false
    const until = Date.now() + 15000
    while (!killed && Date.now() < until) {
      const { rows } = await db.query(
        `SELECT h.body->>'worker' AS worker FROM durasim_history h WHERE h.type = 'result_committed'
          AND h.at > clock_timestamp() - interval '0.2 s' AND NOT EXISTS (SELECT 1 FROM durasim_history p WHERE p.type = 'published' AND p.body->>'job' = h.body->>'job')
          ORDER BY h.at DESC LIMIT 1`)
      if (rows.length && workers.has(rows[0].worker)) {
        const name = rows[0].worker
        workers.get(name).kill('SIGKILL')
        workers.delete(name)
        await log(db, 'worker_crashed', { worker: name })
        newWorker()
        killed = true
      }
      await sleep(0.02)
    }
  }
  if (variant === 'zombie') {
    let stopped = null
    while (!stopped && Date.now() - start < BOUND * 1000) {
      const { rows } = await db.query(
        `SELECT h.worker, j.id FROM pgboss.job j JOIN durasim_holders h ON h.job = j.id
          WHERE j.state = 'active' AND j.started_on < clock_timestamp() - interval '0.9 s' LIMIT 1`)
      if (rows.length && workers.has(rows[0].worker)) {
        stopped = rows[0]
        workers.get(stopped.worker).kill('SIGSTOP')
      }
      await sleep(0.02)
    }
    while (stopped && Date.now() - start < BOUND * 1000) {
      const { rows } = await db.query(
        "SELECT 1 FROM pgboss.job j JOIN durasim_holders h ON h.job = j.id WHERE j.id = $1 AND j.state = 'active' AND h.worker <> $2",
        [stopped.id, stopped.worker])
      if (rows.length) break
      await sleep(0.02)
    }
    if (stopped) workers.get(stopped.worker).kill('SIGCONT')
  }
  let quiescent = false
  while (Date.now() - start < BOUND * 1000) {
    const { rows: [{ open }] } = await db.query(
      "SELECT count(*)::int AS open FROM pgboss.job WHERE name = $1 AND state < 'completed'", [QUEUE])
    const { rows: [{ unsent }] } = await db.query('SELECT count(*)::int AS unsent FROM outbox WHERE NOT published')
    if (open === 0 && unsent === 0) { quiescent = true; break }
    await sleep(0.2)
  }
  await sleep(0.3)
  const { rows } = await db.query('SELECT durasim_us(at) AS at, type, body FROM durasim_history ORDER BY at, seq')
  await producer.stop({ graceful: false, wait: false })
  await db.end()
  const t0 = rows.length ? Number(rows[0].at) : 0
  const header = {
    format: 'durasim-history',
    version: 2,
    time_unit: 'us',
    config: {
      workers: 0,
      lease: EXPIRE * 1e6,
      deadline: null,
      attempts_max: RETRY_LIMIT + 1,
      backoff_base: RETRY_DELAY * 1e6,
      backoff_cap: RETRY_DELAY * 1e6,
      jitter: 'none',
      clock_tolerance: 250000,
      review: false,
      fences: 'none',
      unique: 'while_new'
    }
  }
  const lines = [JSON.stringify(header)]
  let last = 0
  for (const r of rows) {
    const body = r.body
    if ('visible_at' in body) body.visible_at = Math.max(0, Number(body.visible_at) - t0)
    last = Number(r.at) - t0
    lines.push(JSON.stringify({ at: last, type: r.type, ...body }))
  }
  lines.push(JSON.stringify({ at: last, type: 'run_ended', quiescent }))
  fs.writeFileSync(out, lines.join('\n') + '\n')
  console.log(`${out}: ${rows.length} records, variant ${variant}, quiescent ${quiescent}`)
}

"""Runs the procrastinate pipeline (pipeline.py) on a throwaway PostgreSQL and writes the
history its recorder (recorder.sql) kept, in durasim's history format version 2.

  python harness.py VARIANT JOBS OUT.jsonl [SEED]

VARIANT: correct | plain-insert | dual-write | zombie (pipeline.py). The server lives in a temporary
directory on a Unix socket (no TCP), run as a non-root user when we are root, and is stopped and
removed at the end. Four workers take the jobs; every key is submitted twice (the second time
while its job may still wait: procrastinate's queueing lock; or after it finished: a new job).
Faults: correct, plain-insert and dual-write SIGKILL a random worker every ~0.7 s (a new one starts);
zombie SIGSTOPs a worker in the middle of a job for THRESHOLD + 2 s, then lets it go on.
"""

import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib

import psycopg

HERE = os.path.dirname(os.path.abspath(__file__))
variant, jobs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
WORKERS = 4
# Seconds the run may take before the harness stops waiting for it to settle (the zombie's run
# need not settle: its point is the zombie's accepted finish).
BOUND = 25 if variant == "zombie" else 90


def pg_bin():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return os.path.dirname(found[-1])
    path = shutil.which("initdb")
    if path:
        return os.path.dirname(path)
    sys.exit("no PostgreSQL found (/usr/lib/postgresql/*/bin or PATH); install it, e.g. apt-get install postgresql")


def as_server_user(args):
    if os.geteuid() != 0:
        return args
    user = "postgres"
    if subprocess.run(["id", user], capture_output=True).returncode != 0:
        user = "durasim-pg"
        if subprocess.run(["id", user], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user], check=True)
    return ["runuser", "-u", user, "--"] + args, user


def run_pg(args):
    cmd = as_server_user(args)
    if isinstance(cmd, tuple):
        cmd = cmd[0]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd="/")
    if r.returncode != 0:
        sys.exit(f"{args[0]} failed: {r.stderr}{r.stdout}")


def main():
    bindir = pg_bin()
    tmp = tempfile.mkdtemp(prefix="durasim-procrastinate-")
    os.chmod(tmp, 0o755)
    if os.geteuid() == 0:
        _, user = as_server_user([])
        subprocess.run(["chown", f"{user}:", tmp], check=True)
    data = os.path.join(tmp, "data")
    run_pg([f"{bindir}/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
    opts = (f"-c listen_addresses='' -c unix_socket_directories='{tmp}' -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=60")
    run_pg([f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(tmp, "server.log"), "-o", opts, "-w", "-t", "30", "start"])
    procs = []
    try:
        run(tmp, procs)
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    p.kill()
                except ProcessLookupError:
                    pass
                p.wait()
        run_pg([f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"])
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp, procs):
    dsn = f"host={tmp} user=postgres dbname=postgres"
    env = dict(os.environ, DURASIM_PG=dsn, DURASIM_VARIANT=variant, PYTHONUNBUFFERED="1")
    sys.path.insert(0, HERE)
    os.environ.update(DURASIM_PG=dsn, DURASIM_VARIANT=variant, DURASIM_NAME="producer")
    import pipeline  # noqa: E402  (reads the environment above)
    from procrastinate import schema, exceptions

    with psycopg.connect(dsn + " application_name=harness", autocommit=True) as conn:
        conn.execute(schema.SchemaManager.get_schema())
        conn.execute(open(os.path.join(HERE, "recorder.sql")).read())
        pipeline.schema(conn)

    def spawn(role, name=None):
        args = [sys.executable, os.path.join(HERE, "pipeline.py"), role] + ([name] if name else [])
        p = subprocess.Popen(args, env=dict(env, DURASIM_NAME=name or role),
                             stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, f"{name or role}.log"), "w"))
        procs.append(p)
        return p

    generation = [0]

    def new_worker():
        generation[0] += 1
        name = f"w{generation[0]}"
        return name, spawn("worker", name)

    workers = dict(new_worker() for _ in range(WORKERS))
    spawn("relay")
    spawn("rescuer")
    keys = [(rng.choice(["Acme_Corp", "globex", "INITECH"]),
             f"https://docs.example/{i}/scan.pdf", rng.choice(["2024-06-01", "v2"])) for i in range(jobs)]
    submits = [k for k in keys for _ in range(2)]
    rng.shuffle(submits)
    start = time.monotonic()
    next_fault = start + 1.0
    stopped = None
    with psycopg.connect(dsn + " application_name=producer", autocommit=True) as conn:
        with pipeline.app.open():
            for n, (tenant, doc, version) in enumerate(submits):
                key = f"{tenant}:{doc}:{version}"
                # A key's job that runs holds no queueing lock, so a resubmit makes a second job
                # that waits; should the first then fail, procrastinate's retry puts it back to
                # `todo` against the waiting job's lock: UniqueViolation, and the job stays
                # `doing` under a live worker for ever (procrastinate-org/procrastinate#1543,
                # #1446; this recorder found it as no_silent_drop). So the producer submits a key
                # only while none of its jobs runs, with its waiting job (if any) locked so that
                # no worker takes it meanwhile: the resubmit meets a waiting job (deduplicated by
                # the lock) or only finished ones (a new job), the lock's two outcomes.
                content = format(zlib.crc32(doc.encode()), "x")
                while True:
                    with conn.transaction():
                        todo = conn.execute(
                            "SELECT id FROM procrastinate_jobs WHERE queueing_lock = %s AND status = 'todo' FOR UPDATE",
                            (key,),
                        ).fetchone()
                        doing = conn.execute(
                            "SELECT 1 FROM procrastinate_jobs WHERE queueing_lock = %s AND status = 'doing'",
                            (key,),
                        ).fetchone()
                        if not doing or time.monotonic() - start >= BOUND:
                            try:
                                pipeline.extract.configure(queueing_lock=key).defer(
                                    tenant=tenant, key=key, content=content)
                            except exceptions.AlreadyEnqueued:
                                # Refused while waiting: the submit resolved to the waiting job,
                                # still locked, so no worker took it before this record.
                                pipeline.log(conn, "enqueue_deduped", tenant=tenant, key=key,
                                             operation="extract", content=content, existing=todo[0])
                            break
                    time.sleep(0.02)
                time.sleep(rng.uniform(0.0, 0.04))
                now = time.monotonic()
                if now >= next_fault and variant != "zombie":
                    name = rng.choice(sorted(workers))
                    workers.pop(name).kill()
                    with conn.transaction():
                        pipeline.log(conn, "worker_crashed", worker=name)
                    k, p = new_worker()
                    workers[k] = p
                    next_fault = now + rng.uniform(0.4, 1.0)
            if variant == "dual-write":
                # Beside the random kills, one worker is killed between its result's COMMIT
                # and its broker call: the result no event announces (the random kills land
                # there only now and then).
                killed, until = False, time.monotonic() + 15
                while not killed and time.monotonic() < until:
                    row = conn.execute(
                        "SELECT h.body->>'worker' FROM durasim_history h WHERE h.type = 'result_committed'"
                        " AND h.at > clock_timestamp() - interval '0.2 s'"
                        " AND NOT EXISTS (SELECT 1 FROM durasim_history p WHERE p.type = 'published'"
                        "   AND p.body->>'job' = h.body->>'job') ORDER BY h.at DESC LIMIT 1").fetchone()
                    if row and row[0] in workers:
                        workers.pop(row[0]).kill()
                        with conn.transaction():
                            pipeline.log(conn, "worker_crashed", worker=row[0])
                        k, p = new_worker()
                        workers[k] = p
                        killed = True
                    time.sleep(0.02)
            if variant == "zombie":
                # A worker 0.9 s into a job (of 1 to 1.5 s) stops; once the rescuer has given
                # the job to another worker, it goes on, with at most 0.6 s of work left.
                while stopped is None and time.monotonic() - start < BOUND:
                    busy = conn.execute(
                        "SELECT n.name, j.id, j.worker_id FROM procrastinate_jobs j"
                        " JOIN durasim_worker_names n ON n.worker_id = j.worker_id"
                        " WHERE j.status = 'doing' AND (SELECT max(at) FROM durasim_history h"
                        "   WHERE h.type = 'leased' AND (h.body->>'job')::bigint = j.id)"
                        "   < clock_timestamp() - interval '0.9 s' LIMIT 1").fetchone()
                    if busy and busy[0] in workers:
                        os.kill(workers[busy[0]].pid, signal.SIGSTOP)
                        stopped = busy
                    time.sleep(0.02)
                while stopped and time.monotonic() - start < BOUND:
                    taken = conn.execute(
                        "SELECT 1 FROM procrastinate_jobs WHERE id = %s AND status = 'doing'"
                        " AND worker_id IS DISTINCT FROM %s", (stopped[1], stopped[2])).fetchone()
                    if taken:
                        break
                    time.sleep(0.02)
                if stopped:
                    os.kill(workers[stopped[0]].pid, signal.SIGCONT)
        # Settle: every job finished and every event sent, or the bound.
        quiescent = False
        while time.monotonic() - start < BOUND:
            (open_jobs,) = conn.execute(
                "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')").fetchone()
            (unsent,) = conn.execute("SELECT count(*) FROM outbox WHERE NOT published").fetchone()
            if open_jobs == 0 and unsent == 0:
                quiescent = True
                break
            time.sleep(0.2)
        time.sleep(0.3)
        rows = conn.execute("SELECT durasim_us(at), type, body FROM durasim_history ORDER BY at, seq").fetchall()
    t0 = rows[0][0] if rows else 0
    header = {
        "format": "durasim-history", "version": 2, "time_unit": "us",
        "config": {
            "workers": 0,
            "liveness": {"per": "process", "threshold": int(pipeline.THRESHOLD * 1e6)},
            "heartbeat": int(pipeline.HEARTBEAT * 1e6),
            "deadline": None,
            "attempts_max": pipeline.MAX_ATTEMPTS + 1,
            "backoff_base": pipeline.RETRY_WAIT * 1000000,
            "backoff_cap": pipeline.RETRY_WAIT * 1000000,
            "jitter": "none",
            "clock_tolerance": 250000,
            "review": False,
            "fences": "none",
            "unique": "while_waiting",
        },
    }
    with open(out, "w") as f:
        f.write(json.dumps(header) + "\n")
        last = 0
        for at, type_, body in rows:
            if "visible_at" in body:
                body["visible_at"] = max(0, body["visible_at"] - t0)
            last = at - t0
            f.write(json.dumps(dict({"at": last, "type": type_}, **body)) + "\n")
        f.write(json.dumps({"at": last, "type": "run_ended", "quiescent": quiescent}) + "\n")
    print(f"{out}: {len(rows)} records, variant {variant}, quiescent {quiescent}")


if __name__ == "__main__":
    main()

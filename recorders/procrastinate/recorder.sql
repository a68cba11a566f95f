-- The recorder: triggers on procrastinate's own tables (and the pipeline's) that write a
-- durasim history (docs/history-format.md, version 2) into durasim_history, in the same
-- transaction as the change they record, timed by the database clock read after the row lock
-- (clock_timestamp() in an AFTER trigger). A rolled-back change leaves no record. Each process
-- names itself in application_name; that name is the record's worker.

CREATE TABLE durasim_history (
    seq bigserial PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    type text NOT NULL,
    body jsonb NOT NULL
);
CREATE TABLE durasim_worker_names (worker_id bigint PRIMARY KEY, name text NOT NULL);

CREATE FUNCTION durasim_me() RETURNS text
    LANGUAGE sql AS $$ SELECT current_setting('application_name') $$;
CREATE FUNCTION durasim_log(t text, b jsonb) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO durasim_history (type, body) VALUES (t, b) $$;
CREATE FUNCTION durasim_us(t timestamptz) RETURNS bigint
    LANGUAGE sql AS $$ SELECT (extract(epoch FROM t) * 1000000)::bigint $$;

-- A worker registering, and each of its heartbeats: liveness per process.
CREATE FUNCTION durasim_workers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO durasim_worker_names VALUES (NEW.id, durasim_me());
    END IF;
    PERFORM durasim_log('worker_heartbeat', jsonb_build_object('worker', durasim_me()));
    RETURN NEW;
END $$;
CREATE TRIGGER durasim_workers AFTER INSERT OR UPDATE OF last_heartbeat ON procrastinate_workers
    FOR EACH ROW EXECUTE FUNCTION durasim_workers();

-- A job's life: defer, fetch, finish, retry (the worker's after a failure; the rescuer's after
-- its worker stopped heartbeating), fail.
CREATE FUNCTION durasim_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    holder text;
    me text := durasim_me();
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM durasim_log('enqueued', jsonb_build_object(
            'job', NEW.id, 'tenant', NEW.args->>'tenant', 'key', NEW.args->>'key',
            'operation', NEW.task_name, 'content', NEW.args->>'content'));
        RETURN NEW;
    END IF;
    IF OLD.status = NEW.status THEN
        RETURN NEW;
    END IF;
    SELECT name INTO holder FROM durasim_worker_names WHERE worker_id = OLD.worker_id;
    IF OLD.status = 'todo' AND NEW.status = 'doing' THEN
        PERFORM durasim_log('leased', jsonb_build_object('job', NEW.id, 'worker', me));
    ELSIF NEW.status = 'succeeded' THEN
        -- A finish by job id (of a job 'doing' or 'todo'): whoever called it, holder or not.
        PERFORM durasim_log('acked', jsonb_build_object('job', NEW.id, 'worker', me));
    ELSIF OLD.status = 'doing' AND NEW.status = 'todo' AND me = 'rescuer' THEN
        PERFORM durasim_log('rescued', jsonb_build_object(
            'job', NEW.id, 'worker', holder, 'visible_at', durasim_us(NEW.scheduled_at)));
    ELSIF OLD.status = 'doing' AND NEW.status = 'todo' THEN
        PERFORM durasim_log('attempt_failed', jsonb_build_object(
            'job', NEW.id, 'worker', me, 'error', 'provider_unavailable'));
        PERFORM durasim_log('retry_scheduled', jsonb_build_object(
            'job', NEW.id, 'worker', me, 'visible_at', durasim_us(NEW.scheduled_at)));
    ELSIF OLD.status = 'doing' AND NEW.status = 'failed' AND me = 'rescuer' THEN
        PERFORM durasim_log('rescued', jsonb_build_object('job', NEW.id, 'worker', holder));
        PERFORM durasim_log('dead_lettered', jsonb_build_object(
            'job', NEW.id, 'reason', 'max_attempts_exceeded'));
    ELSIF OLD.status = 'doing' AND NEW.status = 'failed' THEN
        PERFORM durasim_log('attempt_failed', jsonb_build_object(
            'job', NEW.id, 'worker', me, 'error', 'provider_unavailable'));
        PERFORM durasim_log('dead_lettered', jsonb_build_object(
            'job', NEW.id, 'worker', me, 'reason', 'max_attempts_exceeded'));
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER durasim_jobs AFTER INSERT OR UPDATE OF status ON procrastinate_jobs
    FOR EACH ROW EXECUTE FUNCTION durasim_jobs();

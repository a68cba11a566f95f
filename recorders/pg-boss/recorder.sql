-- The recorder: triggers on pg-boss's job table (and the pipeline's writes, through
-- durasim_log) that write a durasim history (docs/history-format.md, version 2) into
-- durasim_history, in the transaction of the change they record, timed by the database clock
-- after the row lock. Each process names itself in application_name: the record's worker.
-- pg-boss fails a job by deleting its row and inserting it again (state retry or failed); the
-- insert is what is recorded. Its supervisor's expiry of an active job is a rescue.

CREATE TABLE durasim_history (
    seq bigserial PRIMARY KEY,
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    type text NOT NULL,
    body jsonb NOT NULL
);
CREATE TABLE durasim_holders (job uuid PRIMARY KEY, worker text NOT NULL);

CREATE FUNCTION durasim_me() RETURNS text
    LANGUAGE sql AS $$ SELECT current_setting('application_name') $$;
CREATE FUNCTION durasim_log(t text, b jsonb) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO durasim_history (type, body) VALUES (t, b) $$;
CREATE FUNCTION durasim_us(t timestamptz) RETURNS bigint
    LANGUAGE sql AS $$ SELECT (extract(epoch FROM t) * 1000000)::bigint $$;

CREATE FUNCTION durasim_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    me text := durasim_me();
    holder text;
    failed boolean;
BEGIN
    IF TG_OP = 'INSERT' AND NEW.state = 'created' THEN
        PERFORM durasim_log('enqueued', jsonb_build_object(
            'job', NEW.id, 'tenant', NEW.data->>'tenant', 'key', NEW.data->>'key',
            'operation', NEW.name, 'content', NEW.data->>'content'));
    ELSIF TG_OP = 'INSERT' AND NEW.state IN ('retry', 'failed') THEN
        -- A failure (the worker's) or an expiry (the supervisor's) re-inserted by failJobs.
        SELECT worker INTO holder FROM durasim_holders WHERE job = NEW.id;
        failed := NEW.state = 'failed';
        IF me = 'supervisor' THEN
            PERFORM durasim_log('rescued', jsonb_build_object('job', NEW.id, 'worker', holder)
                || CASE WHEN failed THEN '{}'::jsonb
                        ELSE jsonb_build_object('visible_at', durasim_us(NEW.start_after)) END);
            IF failed THEN
                PERFORM durasim_log('dead_lettered', jsonb_build_object(
                    'job', NEW.id, 'reason', 'max_attempts_exceeded'));
            END IF;
        ELSE
            PERFORM durasim_log('attempt_failed', jsonb_build_object(
                'job', NEW.id, 'worker', me, 'error', 'provider_unavailable'));
            IF failed THEN
                PERFORM durasim_log('dead_lettered', jsonb_build_object(
                    'job', NEW.id, 'worker', me, 'reason', 'max_attempts_exceeded'));
            ELSE
                PERFORM durasim_log('retry_scheduled', jsonb_build_object(
                    'job', NEW.id, 'worker', me, 'visible_at', durasim_us(NEW.start_after)));
            END IF;
        END IF;
    ELSIF TG_OP = 'UPDATE' AND OLD.state < 'active' AND NEW.state = 'active' THEN
        INSERT INTO durasim_holders VALUES (NEW.id, me)
            ON CONFLICT (job) DO UPDATE SET worker = EXCLUDED.worker;
        PERFORM durasim_log('leased', jsonb_build_object('job', NEW.id, 'worker', me));
    ELSIF TG_OP = 'UPDATE' AND OLD.state = 'active' AND NEW.state = 'completed' THEN
        -- complete() by job id: whoever called it, holder or not.
        PERFORM durasim_log('acked', jsonb_build_object('job', NEW.id, 'worker', me));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER durasim_jobs AFTER INSERT OR UPDATE ON pgboss.job
    FOR EACH ROW EXECUTE FUNCTION durasim_jobs();

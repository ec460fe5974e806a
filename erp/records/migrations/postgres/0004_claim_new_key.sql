-- The common claim of a write in one round trip: a new idempotency key,
-- while the client holds fewer than p_max live keys (p_max 0: no cap),
-- and then, when p_invoice is given, the invoice's write lease. It claims
-- nothing and answers claimed false when the key has a row or the cap is
-- reached; the store then claims in a transaction of its own, which reads
-- the row. The lock is the store's lock of the client's keys (the key
-- space 1701997361 is clientLockSpace, "erk1"), so that the two paths
-- count one after another. Each statement of the function sees what was
-- committed before it started: the count follows the lock.
CREATE FUNCTION erpgate_claim_new_key(
	p_client TEXT, p_key TEXT, p_operation TEXT, p_digest TEXT,
	p_now TIMESTAMPTZ, p_until TIMESTAMPTZ, p_max INTEGER,
	p_invoice TEXT, p_holder TEXT, p_lease_operation TEXT, p_lease_until TIMESTAMPTZ)
RETURNS TABLE (claimed BOOLEAN, holder TEXT, operation TEXT, takeovers INTEGER, lease_until TIMESTAMPTZ)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
	IF p_max > 0 THEN
		PERFORM pg_advisory_xact_lock(1701997361, hashtext(p_client));
	END IF;
	INSERT INTO idempotency_keys (client, idem_key, operation, digest, state, lease_until, created_at)
		SELECT p_client, p_key, p_operation, p_digest, 'in_flight', p_until, p_now
		WHERE p_max <= 0 OR (SELECT COUNT(*) FROM idempotency_keys k WHERE k.client = p_client
			AND (k.state = 'in_flight' OR k.expires_at IS NULL OR k.expires_at > p_now)) < p_max
		ON CONFLICT (client, idem_key) DO NOTHING;
	IF NOT FOUND THEN
		RETURN QUERY SELECT false, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::TIMESTAMPTZ;
		RETURN;
	END IF;
	IF p_invoice IS NULL THEN
		RETURN QUERY SELECT true, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::TIMESTAMPTZ;
		RETURN;
	END IF;
	RETURN QUERY INSERT INTO invoice_leases AS l (invoice_id, holder, operation, lease_until)
		VALUES (p_invoice, p_holder, p_lease_operation, p_lease_until)
		ON CONFLICT (invoice_id) DO UPDATE SET
			holder = CASE WHEN l.lease_until <= p_now THEN excluded.holder ELSE l.holder END,
			operation = CASE WHEN l.lease_until <= p_now THEN excluded.operation ELSE l.operation END,
			takeovers = CASE WHEN l.lease_until <= p_now THEN l.takeovers + 1 ELSE l.takeovers END,
			lease_until = CASE WHEN l.lease_until <= p_now THEN excluded.lease_until ELSE l.lease_until END
		RETURNING true, l.holder, l.operation, l.takeovers, l.lease_until;
END
$$;

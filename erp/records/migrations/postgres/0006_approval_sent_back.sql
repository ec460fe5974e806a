-- A person may send an approval back to the agent with a question: the
-- approval is then sent_back, no longer pending, and its decision_reason is
-- the question.
ALTER TABLE approvals DROP CONSTRAINT approvals_status_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_status_check
	CHECK (status IN ('pending', 'approved', 'rejected', 'superseded', 'sent_back'));

# Input builders shared by the library's tests (a _test file: never part of the bundle).
package acs.testlib

prov(id, origin) := {"provenance_id": id, "origin": origin}

arg(value, pid, origin) := {"value": value, "provenance": prov(pid, origin)}

client_full := {"modify_capable": true, "ask_capable": true}

empty_session := {
	"id": "sess-1",
	"agent_id": "agent-1",
	"intent": null,
	"turn": {"id": "t1", "index": 1, "step_count": 1, "tool_call_count": 1},
	"counters": {
		"tool_calls_total": 1,
		"tool_calls_last_minute": 1,
		"tool_calls_last_minute_by_tool": {},
		"deferrals": 0,
	},
	"provenance": {"summary": {}, "trust": {}, "lineage": {}, "records": {}},
	"taint": {"earliest_untrusted": null, "latest_untrusted": null, "untrusted_steps": 0},
	"recent_steps": [],
	"approvals": [],
	"skills": {"registered": {}, "loaded": []},
}

step(method, payload, session, client) := {
	"method": method,
	"params": {
		"acs_version": "0.1.0",
		"request_id": "00000000-0000-4000-8000-000000000001",
		"timestamp": "2026-03-01T10:00:00Z",
		"metadata": {"agent_id": "agent-1", "session_id": "sess-1", "turn_id": "t1"},
		"payload": payload,
	},
	"session": session,
	"client": client,
	"guardian": {"now": "2026-03-01T10:00:00Z", "policy_version": "test"},
}

tool_call(tool, args) := step("steps/toolCallRequest", {"tool": {"name": tool}, "arguments": args}, empty_session, client_full)

tool_call_in(tool, args, session) := step("steps/toolCallRequest", {"tool": {"name": tool}, "arguments": args}, session, client_full)

# A session whose provenance table knows the given trust levels: {pid: trust}.
session_with_trust(trust) := {
	"id": "sess-1",
	"agent_id": "agent-1",
	"intent": null,
	"turn": {"id": "t1", "index": 1, "step_count": 1, "tool_call_count": 1},
	"counters": {"tool_calls_total": 1, "tool_calls_last_minute": 1, "tool_calls_last_minute_by_tool": {}, "deferrals": 0},
	"provenance": {"summary": {}, "trust": trust, "lineage": {}, "records": {}},
	"taint": {"earliest_untrusted": null, "latest_untrusted": null, "untrusted_steps": 0},
	"recent_steps": [],
	"approvals": [],
	"skills": {"registered": {}, "loaded": []},
}

session_with_intent(parsed, scope_mode) := session_with_intent_and_approvals(parsed, scope_mode, [])

session_with_intent_and_approvals(parsed, scope_mode, approvals) := {
	"id": "sess-1",
	"agent_id": "agent-1",
	"intent": {"parsed": parsed, "scope_mode": scope_mode, "effective_capabilities": parsed},
	"turn": {"id": "t1", "index": 1, "step_count": 1, "tool_call_count": 1},
	"counters": {"tool_calls_total": 1, "tool_calls_last_minute": 1, "tool_calls_last_minute_by_tool": {}, "deferrals": 0},
	"provenance": {"summary": {}, "trust": {}, "lineage": {}, "records": {}},
	"taint": {"earliest_untrusted": null, "latest_untrusted": null, "untrusted_steps": 0},
	"recent_steps": [],
	"approvals": approvals,
	"skills": {"registered": {}, "loaded": []},
}

# A general session: provenance {trust, lineage, records}, taint, turn index, counters, skills.
session(prov, taint, turn_index, counters, skills) := {
	"id": "sess-1",
	"agent_id": "agent-1",
	"intent": null,
	"turn": {"id": "t1", "index": turn_index, "step_count": 1, "tool_call_count": counters.turn_tool_calls},
	"counters": counters,
	"provenance": prov,
	"taint": taint,
	"recent_steps": [],
	"approvals": [],
	"skills": skills,
}

no_taint := {"earliest_untrusted": null, "latest_untrusted": null, "untrusted_steps": 0}

base_counters := {"turn_tool_calls": 1, "tool_calls_total": 1, "tool_calls_last_minute": 1, "tool_calls_last_minute_by_tool": {}, "deferrals": 0}

no_skills := {"registered": {}, "loaded": []}

reason_codes(findings) := {f.reason_code | some f in findings}

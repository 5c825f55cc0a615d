# Approvals: configured tools/capabilities need an approver's grant (ASK with ask_details, §9) unless one is on record.
package acs.approvals

import data.acs.lib

cfg := lib.config.approvals

needs_approval if lib.tool_name in cfg.require_approval_tools

needs_approval if lib.capability in cfg.require_approval_capabilities

granted if {
	some g in input.session.approvals
	g.tool == lib.tool_name
}

granted if {
	some g in input.session.approvals
	not g.tool
	lib.capability in g.capabilities
}

# METADATA
# title: Approval required
# description: Ask the configured approver before a tool call that needs approval, unless a grant is on record.
# custom:
#   policy_id: acs.approvals
#   policy_name: Human approval
#   rule_id: approvals.required
#   reason_code: approval_required
findings contains {
	"disposition": "ask",
	"reason_code": "approval_required",
	"reasoning": sprintf("tool %s requires approval", [lib.tool_name]),
	"policy_id": "acs.approvals",
	"policy_name": "Human approval",
	"rule_id": "approvals.required",
	"paradigm": "approvals",
	"policy_data": {"tool": lib.tool_name},
	"ask_details": {
		"approver": cfg.approver,
		"question": sprintf("Approve the call to %s?", [lib.tool_name]),
		"context": sprintf("session %s, turn %d", [input.session.id, input.session.turn.index]),
		"timeout_seconds": cfg.timeout_seconds,
		"timeout_disposition": "deny",
		"options": ["approve", "deny"],
	},
} if {
	lib.is_tool_call
	needs_approval
	not granted
}

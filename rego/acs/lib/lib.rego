# Shared accessors over the ACS policy input (docs/policy-authoring.md). No findings here.
package acs.lib

config := data.acs_config

payload := object.get(input.params, "payload", {})

is_mcp if startswith(input.method, "protocols/MCP/")

is_mcp if startswith(input.method, "wrapped:mcp")

# The MCP method inside a wrapped message (ACS §12: the intact MCP message is the payload).
mcp_method := payload.method if is_mcp

is_native_tool_call if input.method == "steps/toolCallRequest"

is_mcp_tool_call if {
	is_mcp
	mcp_method == "tools/call"
}

is_tool_call if is_native_tool_call

is_tool_call if is_mcp_tool_call

tool_name := payload.tool.name if is_native_tool_call

tool_name := payload.params.name if is_mcp_tool_call

# Argument values by name: native arguments are {value, provenance}; MCP arguments are raw values.
argument_values[name] := a.value if {
	is_native_tool_call
	some name, a in payload.arguments
}

argument_values[name] := v if {
	is_mcp_tool_call
	some name, v in payload.params.arguments
}

argument_provenance[name] := a.provenance.provenance_id if {
	is_native_tool_call
	some name, a in payload.arguments
	is_string(a.provenance.provenance_id)
}

# RFC 6901 escaping. Most names need none: testing with the Wasm-native `contains` first saves the two
# `replace` host calls per name.
escape_pointer(s) := replace(replace(s, "~", "~0"), "/", "~1") if needs_pointer_escape(s)

else := s

needs_pointer_escape(s) if contains(s, "~")

needs_pointer_escape(s) if contains(s, "/")

# RFC 6901 target of a tool argument inside params.payload (ACS §6.3, modification disjointness).
argument_pointer(name) := concat("", ["/arguments/", escape_pointer(name)]) if is_native_tool_call

argument_pointer(name) := concat("", ["/params/arguments/", escape_pointer(name)]) if is_mcp_tool_call

# The requested capability: declared on the step, else the tool's configured capability.
capability := payload.capability if {
	is_native_tool_call
	is_string(payload.capability)
}

capability := c if {
	is_tool_call
	# object.get: `not` applies to a call whose operands are defined (OPA evaluates them first).
	not is_string(object.get(payload, "capability", null))
	c := config.ibac.tool_capabilities[tool_name]
}

consequential if capability in config.consequential_capabilities

consequential if tool_name in config.consequential_tools

trust(pid) := object.get(input.session.provenance.trust, pid, "unknown")

untrusted(pid) if trust(pid) != "trusted"

lineage(pid) := object.get(input.session.provenance.lineage, pid, [])

origin_of(pid) := input.session.provenance.records[pid].origin

# Data-bearing strings of the step, with their RFC 6901 path inside params.payload.
text_fields contains {"path": sprintf("/content/%d/value", [i]), "value": c.value} if {
	some i, c in payload.content
	is_string(c.value)
}

text_fields contains {"path": "/content/value", "value": payload.content.value} if is_string(payload.content.value)

text_fields contains {"path": concat("", ["/arguments/", escape_pointer(name), "/value"]), "value": a.value} if {
	is_native_tool_call
	some name, a in payload.arguments
	is_string(a.value)
}

text_fields contains {"path": concat("", ["/params/arguments/", escape_pointer(name)]), "value": v} if {
	is_mcp_tool_call
	some name, v in payload.params.arguments
	is_string(v)
}

text_fields contains {"path": sprintf("/outputs/%d/value", [i]), "value": o.value} if {
	some i, o in payload.outputs
	is_string(o.value)
}

text_fields contains {"path": sprintf("/results/%d/value", [i]), "value": r.value} if {
	some i, r in payload.results
	is_string(r.value)
}

text_fields contains {"path": "/summary/value", "value": payload.summary.value} if is_string(payload.summary.value)

text_fields contains {"path": "/raw_command", "value": payload.raw_command} if is_string(payload.raw_command)

# Wrapped MCP responses (e.g. a tools/call result) carry text content under result.content[].text.
text_fields contains {"path": sprintf("/result/content/%d/text", [i]), "value": c.text} if {
	is_mcp
	some i, c in payload.result.content
	is_string(c.text)
}

// The policy the browser page compiles, shared with the test so it can compile the same text in Node.
export const POLICY_FILE = 'demo.rego';
export const POLICY_ENTRYPOINT = 'demo/decision';
export const POLICY = `package demo

default allow := false

# regex.match and glob.match are host builtins (re2js): the page supplies them.
allow if {
  input.user.role == "admin"
}

allow if {
  input.user.role == "viewer"
  regex.match(\`^read:[a-z]+$\`, input.action)
  glob.match("docs.*", ["."], input.resource)
}

decision := {
  "allow": allow,
  "reason": sprintf("%s (%s) %s %s on %s", [input.user.name, input.user.role, verb, input.action, input.resource]),
}

verb := "may" if allow
verb := "may not" if not allow
`;

package acs.baseline_test

import data.acs.baseline
import data.acs.testlib

test_rm_rf_root_is_denied if {
	fs := baseline.findings with input as testlib.tool_call("shell", {"command": testlib.arg("rm -rf /", "p1", "user_input")})
	"destructive_shell_command_blocked" in testlib.reason_codes(fs)
}

test_rm_rf_home_via_raw_command_is_denied if {
	inp := testlib.step("steps/toolCallRequest", {"tool": {"name": "exec"}, "arguments": {}, "raw_command": "cd /tmp && rm -fr ~"}, testlib.empty_session, testlib.client_full)
	fs := baseline.findings with input as inp
	"destructive_shell_command_blocked" in testlib.reason_codes(fs)
}

test_other_destructive_commands_are_denied if {
	every cmd in ["mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=/dev/sda bs=1M", ":(){ :|:& };:", "sudo shutdown -h now", "git push origin main --force"] {
		fs := baseline.findings with input as testlib.tool_call("bash", {"cmd": testlib.arg(cmd, "p1", "user_input")})
		"destructive_shell_command_blocked" in testlib.reason_codes(fs)
	}
}

test_harmless_commands_pass if {
	every cmd in ["ls -la /workspace", "rm build/output.o", "git push origin main", "echo shutdown-notice"] {
		fs := baseline.findings with input as testlib.tool_call("shell", {"command": testlib.arg(cmd, "p1", "user_input")})
		not "destructive_shell_command_blocked" in testlib.reason_codes(fs)
	}
}

test_commands_of_non_shell_tools_are_not_parsed if {
	fs := baseline.findings with input as testlib.tool_call("notes.write", {"command": testlib.arg("rm -rf /", "p1", "user_input")})
	count(fs) == 0
}

test_tool_denylist if {
	fs := baseline.findings with input as testlib.tool_call("curl", {})
		with data.acs_config.baseline.tool_denylist as ["curl"]
	"tool_denied" in testlib.reason_codes(fs)
}

test_tool_allowlist if {
	denied := baseline.findings with input as testlib.tool_call("curl", {})
		with data.acs_config.baseline.tool_allowlist as ["read_file"]
	"tool_not_allowed" in testlib.reason_codes(denied)
	allowed := baseline.findings with input as testlib.tool_call("read_file", {})
		with data.acs_config.baseline.tool_allowlist as ["read_file"]
	count(allowed) == 0
}

test_mcp_method_denylist if {
	inp := testlib.step("protocols/MCP/resources/read", {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}}, testlib.empty_session, testlib.client_full)
	fs := baseline.findings with input as inp with data.acs_config.baseline.mcp_method_denylist as ["resources/read"]
	"mcp_denied" in testlib.reason_codes(fs)
}

test_paths_outside_workspace_are_denied if {
	every p in ["/etc/passwd", "~/.ssh/id_rsa", "/workspace/../etc/shadow", "../secrets", "/workspacefoo/x"] {
		fs := baseline.findings with input as testlib.tool_call("read_file", {"path": testlib.arg(p, "p1", "user_input")})
		"path_outside_workspace" in testlib.reason_codes(fs)
	}
}

test_paths_inside_workspace_pass if {
	every p in ["/workspace/src/main.ts", "/workspace", "src/index.ts", "/tmp/agent/out.txt"] {
		fs := baseline.findings with input as testlib.tool_call("read_file", {"path": testlib.arg(p, "p1", "user_input")})
		count(fs) == 0
	}
}

# The single alternation decides exactly as the configured patterns one by one (inline flags stay scoped).
test_combined_pattern_agrees_with_each_pattern if {
	samples := ["rm -rf /", "rm -fr ~", "rm build/output.o", "DROP TABLE users", "drop database x", "MKFS.EXT4 /dev/sda1", "mkfs.ext4 /dev/sda1", "SHUTDOWN now", "echo shutdown-notice", "find / -name x -delete", "chmod -R 777 /", "ls -la"]
	every cmd in samples {
		one_by_one := count([p | some p in baseline.cfg.destructive_shell_patterns; regex.match(p, cmd)]) > 0
		regex.match(baseline.destructive_pattern, cmd) == one_by_one
	}
	not regex.match(baseline.destructive_pattern, "MKFS.EXT4 /dev/sda1")
	regex.match(baseline.destructive_pattern, "DROP TABLE users")
}

# The native `..`-segment check decides exactly as the regex it replaced, on paths built to sit at its edges:
# ".." inside a file name, "./", ".../", absolute and relative paths, trailing "..", unicode, newlines, "\".
test_dotdot_segment_check_agrees_with_the_regex if {
	samples := [
		"a..b", "/workspace/a..b", "/workspace/..a", "/workspace/a..", "/workspace/...", "/workspace/.../x",
		"./src/a.ts", "./..", "./../x", "..", "../", "/..", "/workspace/..", "/workspace/../x", "a/../b",
		"a/b/..", "..a/b", "a/b..", ".", "", "/", "//..//", "/workspace/./x", "/workspace/dir.../x",
		"/workspace/données/../é", "/workspace/日本/..", "/workspace/é..é", "/workspace/a\n../b", "/workspace/a\\..\\b",
		"~/..", "/workspace/.. /x", "/workspace/ ../x",
	]
	every p in samples {
		regex.match(`(^|/)\.\.(/|$)`, p) == (count([true | baseline.dotdot_segment(p)]) > 0)
	}
}

test_dotdot_edge_paths_decide_as_before if {
	every p in ["/workspace/a..b", "/workspace/...", "/workspace/é..é", "./src/a.ts", "a..b", "/workspace/dir.../x", "/tmp/agent/日本.txt"] {
		not baseline.escapes_workspace(p)
	}
	every p in ["./../x", "a/../b", "a/b/..", "..", "/workspace/..", "/workspace/日本/..", "/tmp/agent/../x"] {
		baseline.escapes_workspace(p)
	}
}

destructive_samples := [
	"rm -rf /", "rm -fr ~", "cd /tmp && rm -fr ~", "x; rm\t-rf /", "rm -r -f *", "sudo rm -Rf $HOME", "rm --no-preserve-root -rf /",
	"rm -rf / --no-preserve-root", "mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=/dev/sda bs=1M",
	"cat x > /dev/sda", "echo >/dev/nvme0n1", ":(){ :|:& };:", ":() { : | : & } ; :", "sudo shutdown -h now",
	"reboot", "a; halt", "systemctl poweroff", "chmod -R 777 /", "chmod -v -R 0777 /etc", "chown -R nobody /",
	"git push origin main --force", "git push -f", "DROP TABLE users", "drop database x", "Drop\tSchema s",
	"psql -c 'DROP TABLE t'", "find / -name x -delete", "find / -type f -delete",
]

benign_commands := ["MKFS.EXT4 /dev/sda1", "ls -la /workspace", "rm build/output.o", "git push origin main", "echo shutdown-notice", "npm run format", "cat README.md", "grep -rn TODO src", "git status", "rm-tool --help", "ls -la"]

# The pre-filter admits every command the combined pattern matches, and skips the regex for common benign ones.
test_destructive_prefilter_admits_every_destructive_command if {
	every cmd in array.concat(destructive_samples, benign_commands) {
		regex.match(baseline.destructive_pattern, cmd) == (count([true | baseline.may_be_destructive(cmd); regex.match(baseline.destructive_pattern, cmd)]) > 0)
	}
	every cmd in destructive_samples {
		regex.match(baseline.destructive_pattern, cmd)
	}
}

test_destructive_prefilter_skips_the_regex_for_benign_commands if {
	every cmd in ["ls -la /workspace", "npm run format", "cat README.md", "grep -rn TODO src", "git status", "rm-tool --help", "python3 -m pytest -q"] {
		not baseline.may_be_destructive(cmd)
	}
}

test_destructive_prefilters_are_lower_case if {
	every lit in baseline.cfg.destructive_prefilters {
		lower(lit) == lit
	}
}

test_without_destructive_prefilters_every_command_runs_the_regex if {
	baseline.may_be_destructive("ls -la") with data.acs_config.baseline.destructive_prefilters as null
	baseline.may_be_destructive("ls -la") with data.acs_config.baseline.destructive_prefilters as "rm "
	not baseline.may_be_destructive("ls -la") with data.acs_config.baseline.destructive_prefilters as ["rm "]
}

package acs.lib_test

import data.acs.lib

test_escape_pointer_escapes_only_when_needed if {
	lib.escape_pointer("to") == "to"
	lib.escape_pointer("a/b") == "a~1b"
	lib.escape_pointer("m~n") == "m~0n"
	lib.escape_pointer("~/x") == "~0~1x"
}

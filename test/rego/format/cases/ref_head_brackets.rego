package cases.refheads

limits["cpu"] := 2

limits[k] := v if {
	some k, v in input.extra
}

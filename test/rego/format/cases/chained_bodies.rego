package p

allow if { input.role == "admin" } { input.role == "owner" }

named if input.name == "a" { input.name == "b" }

ids contains x if {
	x := 1
} {
	x := 2
}

obj := {"k": [1,
	2]} if { input.a } { input.b }

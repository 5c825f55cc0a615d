package cases.consts

flags.beta.enabled if true

level = 2

label := "x" if { true }

double(x) = y if {
	y := x * 2
}

valid(x) if { x > 0 }

package cases.elses

tier := "gold" if {
    input.points > 100
} else := "silver" if {
    input.points > 50
}

size := "big" if { input.n > 9 } else := "small"

rank := 1 if {
    input.first
}
else := 2

color := "red" if {
    input.hot
}
# the usual case
else := "blue"

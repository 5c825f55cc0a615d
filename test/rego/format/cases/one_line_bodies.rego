package cases.oneline

allow if { input.admin }

review if {
    input.flagged
}

deny contains msg if { msg := "no" } # why

pair if { {1, 2} }

both if { input.a; input.b }

package cases.comments_in_terms

# One comment inside a term: the term is laid out and the comment trails it.
single := {"role":  # who
"admin"}

# Two comments that would share one output line: opa fmt keeps the term as written.
limits := {"cpu": # per pod
{"max": # cores
4}} # hard limit

check if {
	conf := {"mode": # this
	    "strict"} # and this
	conf.mode == input.mode
}

# In a rule head, the comment after such a term follows it and the head goes on on the next line.
labels := {"team": # owner
"core"} if { # only when
	input.labelled
}

owners[{"team": # key
"core"} # of the map
] := "core"

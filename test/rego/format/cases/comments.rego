package cases.comments

# first group
# still first   

# second group
allow if {
	# before
	input.a # trailing

	# after a gap
	input.b
	# before the brace
} # after the brace

# at the end

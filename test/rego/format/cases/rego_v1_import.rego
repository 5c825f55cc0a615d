package cases.regov1

import rego.v1
import future.keywords.in # covered by rego.v1

allow if "a" in input.xs

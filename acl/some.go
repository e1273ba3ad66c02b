package acl

// ResourceNamed returns the resource whose keyword is name ("service").
func ResourceNamed(name string) (Resource, bool) {
	for r, n := range resourceNames {
		if n != "" && n == name {
			return Resource(r), true
		}
	}
	return 0, false
}

// AccessNamed returns the access level written name: read, list or write.
func AccessNamed(name string) (Access, bool) {
	switch name {
	case "read":
		return AccessRead, true
	case "list":
		return AccessList, true
	case "write":
		return AccessWrite, true
	}
	return AccessNone, false
}

// Allowed answers a check on res by its value: name is the segment,
// ignored for operator, acl and keyring.
func (a *Authorizer) Allowed(res Resource, name string, want Access) bool {
	if res.topLevel() {
		return a.allowedTop(res, want)
	}
	return a.allowed(res, name, want)
}

// AllowedSome reports whether the token may do want to at least one name
// of res: the default allows it, or one of its rules does. An endpoint
// that learns the name only from a request's body asks it before reading
// the body, so that a token with no such right at all costs nothing more.
func (a *Authorizer) AllowedSome(res Resource, want Access) bool {
	if res.topLevel() {
		return a.allowedTop(res, want)
	}
	return a.defaultAllow || a.trees[res].root.grantsSome(want)
}

func (n *node) grantsSome(want Access) bool {
	if n == nil {
		return false
	}
	if n.exact.grants(want) || n.prefix.grants(want) {
		return true
	}
	for _, c := range n.children {
		if c.grantsSome(want) {
			return true
		}
	}
	return false
}

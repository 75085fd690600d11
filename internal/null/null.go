package null

// String returns a pointer to s, or nil when s is empty: JSON null for an
// absent text.
func String(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Int returns a pointer to v, or nil when v is 0: JSON null for a number
// whose zero means "none" (an ifindex: no link has 0; an MTU or hop limit
// a route does not set). Not for a VLAN ID: 0 is a priority tag's.
func Int(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}

module example.com/roceapp

go 1.26.0

require (
	github.com/gopacket/gopacket v1.7.7
	github.com/roce-probe/roce-probe v0.0.0-00010101000000-000000000000
)

require (
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/roce-probe/roce-probe => ../

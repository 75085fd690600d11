package ah

import "net"

// MAC is a hardware address. TODO(ah): replace with vlan.MAC once vlan/ lands.
type MAC = net.HardwareAddr

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/spf13/cobra"
)

func init() { register(newLabCmd) }

// The lab package's entry points; tests replace them so that no unit test
// builds or removes a real fabric.
var (
	labUp          = lab.Up
	labDown        = lab.Down
	labStatus      = lab.GetStatus
	labFabricUp    = lab.FabricUp
	labLeafSpineUp = lab.LeafSpineUp
	labFabricDown  = func() error { return errors.Join(lab.LeafSpineDown(), lab.FabricDown()) }
	// labFabricExists reports whether the fabric's switch namespace exists.
	labFabricExists = func() bool {
		_, err := os.Stat(filepath.Join("/run/netns", lab.SwitchNetns))
		return err == nil
	}
	labLeafSpineExists = lab.LeafSpineExists
)

func newLabCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "lab",
		Short: "Create or remove a Soft-RoCE lab (rxe0 on a veth pair) in the running kernel",
		Long: `lab builds the standard roce-probe lab in the running kernel, so the rest of
roce-probe can be tried without a RoCE NIC: the network namespace "peer", a veth
pair veth0/veth1, VLAN devices (802.1Q 100 and 200, QinQ 802.1ad 1000 + 802.1Q 10)
with IPv4 and IPv6 addresses, and the Soft-RoCE device rxe0 on veth0.

It needs root and a kernel that can load rdma_rxe and 8021q (most distribution
kernels can; cloud kernels often cannot). Where the kernel cannot, scripts/lab.sh
in the repository boots one under qemu instead.

With --fabric, lab up builds the multi-host fabric instead (next to the
single-host lab, if that is up): hosts h1..h4, each a network namespace with its
own rxe device, behind the switch namespace "sw" with a VLAN-filtering bridge.
With --leaf-spine (alone or with --fabric), it builds the routed leaf-spine:
routers leaf1, leaf2, spine1, spine2 (namespaces, 5-tuple multipath routes over
both spines) and hosts h5, h6 (behind leaf1), h7, h8 (behind leaf2) with
rxe5..rxe8, IPv4 and IPv6. Both need a kernel whose rxe works in any network
namespace (Linux 7.x). lab down removes all of them.`,
		Example: `  roce-probe lab up
  roce-probe lab status
  roce-probe gids --dev rxe0
  roce-probe lab down`,
	}
	c.Args, c.RunE = subcommandArgs, needsSubcommand
	c.AddCommand(newLabUpCmd(), newLabDownCmd(), newLabStatusCmd())
	return c
}

// labErr turns the lab package's environment errors into exit-2 errors.
func labErr(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

func newLabUpCmd() *cobra.Command {
	var noVLANs, fabric, leafSpine bool
	var timeout time.Duration
	var format string
	c := &cobra.Command{
		Use:   "up",
		Short: "Build the lab: peer namespace, veth pair, VLANs, addresses, rxe0 (root); or the fabric (--fabric) and the leaf-spine (--leaf-spine)",
		Example: `  roce-probe lab up
  roce-probe lab up --no-vlans -o json
  roce-probe lab up --fabric
  roce-probe lab up --leaf-spine`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fabric || leafSpine {
				if noVLANs {
					return usagef("--no-vlans is for the single-host lab; the fabric and the leaf-spine always have their VLANs and routes")
				}
				if fabric {
					if err := labFabricUp(timeout); err != nil {
						return labErr(err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "fabric up: hosts %s behind switch namespace %s\n", fabricHostList(), lab.SwitchNetns)
				}
				if leafSpine {
					if err := labLeafSpineUp(timeout); err != nil {
						return labErr(err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "leaf-spine up: hosts %s; leaves %s, spines %s\n", leafSpineHostList(), strings.Join(lab.Leaves, ", "), strings.Join(lab.Spines, ", "))
				}
				return nil
			}
			if err := labUp(lab.Options{NoVLANs: noVLANs, Timeout: timeout}); err != nil {
				return labErr(err)
			}
			return printLabStatus(cmd.OutOrStdout(), format)
		},
	}
	c.Flags().BoolVar(&noVLANs, "no-vlans", false, "build only the untagged network (no 8021q needed)")
	c.Flags().BoolVar(&fabric, "fabric", false, "build the multi-host fabric (h1..h4 behind a switch namespace; Linux 7.x)")
	c.Flags().BoolVar(&leafSpine, "leaf-spine", false, "build the routed leaf-spine (h5..h8 behind leaf1, leaf2; spines spine1, spine2; Linux 7.x)")
	durationVar(c.Flags(), &timeout, "timeout", 20*time.Second, 0, time.Hour, true, "how long to wait for rxe0's port and GID table (at most 1h)")
	outputVar(c.Flags(), &format, "table", "json")
	return c
}

func newLabDownCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "down",
		Short:   "Remove the lab, the fabric and the leaf-spine (root)",
		Example: `  roce-probe lab down`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Say what was removed: "lab removed" when nothing existed
			// told the user something untrue.
			before, _ := labStatus()
			hadLab := before.RDMAExists || before.PeerExists
			for _, d := range before.Netdevs {
				hadLab = hadLab || d.Exists
			}
			hadFabric, hadLeafSpine := labFabricExists(), labLeafSpineExists()
			ferr := labFabricDown()
			if err := labDown(); err != nil {
				return labErr(err)
			}
			if ferr != nil {
				return labErr(ferr)
			}
			var removed []string
			if hadLab {
				removed = append(removed, "the lab ("+before.RDMADevice+", namespace "+before.PeerNetns+" and their netdevs)")
			}
			if hadFabric {
				removed = append(removed, "the fabric (hosts "+fabricHostList()+", switch namespace "+lab.SwitchNetns+")")
			}
			if hadLeafSpine {
				removed = append(removed, "the leaf-spine (hosts "+leafSpineHostList()+", routers "+strings.Join(append(append([]string(nil), lab.Leaves...), lab.Spines...), ", ")+")")
			}
			if len(removed) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to remove: neither the lab nor a fabric was up")
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), "removed", strings.Join(removed, " and "))
			return nil
		},
	}
}

func newLabStatusCmd() *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "status",
		Short: "Show which parts of the lab exist; exits 1 when the lab is not (fully) up",
		Example: `  roce-probe lab status
  roce-probe lab status -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printLabStatus(cmd.OutOrStdout(), format)
		},
	}
	outputVar(c.Flags(), &format, "table", "json")
	return c
}

func printLabStatus(w io.Writer, format string) error {
	s, err := labStatus()
	if err != nil {
		return labErr(err)
	}
	if format == "json" {
		if err := writeJSON(w, s); err != nil {
			return err
		}
	} else {
		yes := map[bool]string{true: "yes", false: "no"}
		fmt.Fprintf(w, "RDMA device %s: exists %s", s.RDMADevice, yes[s.RDMAExists])
		if s.RDMAExists {
			fmt.Fprintf(w, ", netdev %s, port 1 %s", s.RDMANetdev, s.PortState)
		}
		fmt.Fprintf(w, "\nnamespace %s: exists %s\n", s.PeerNetns, yes[s.PeerExists])
		for _, d := range s.Netdevs {
			fmt.Fprintf(w, "netdev %-15s exists %-3s up %s\n", d.Name, yes[d.Exists], yes[d.Up])
		}
	}
	if !s.Up() {
		return findingError{"the lab is not up (run: roce-probe lab up, as root)"}
	}
	return nil
}

func fabricHostList() string {
	var names []string
	for _, h := range lab.Hosts {
		names = append(names, h.Name+" ("+h.RDMADevice+")")
	}
	return strings.Join(names, ", ")
}

func leafSpineHostList() string {
	var names []string
	for _, h := range lab.RoutedHosts {
		names = append(names, h.Name+" ("+h.RDMADevice+", "+h.Leaf+")")
	}
	return strings.Join(names, ", ")
}

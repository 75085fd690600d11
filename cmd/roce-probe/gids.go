package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/null"
)

func init() { register(newGidsCmd) }

// gidsJSON is the document `gids -o json` prints.
type gidsJSON struct {
	// Predicted is true when the host has no RDMA device and the ports
	// are the tables Soft-RoCE would get.
	Predicted bool           `json:"predicted"`
	Ports     []gidsPortJSON `json:"ports"`
}

// gidsPortJSON is one port: the header the table shows, its entries, and
// the comparison with the table the kernel would build.
type gidsPortJSON struct {
	Device    string      `json:"device"`
	Port      int         `json:"port"`
	State     *string     `json:"state"`
	PhysState *string     `json:"phys_state"`
	LinkLayer *string     `json:"link_layer"`
	Netdev    *string     `json:"netdev"`
	ActiveMTU *int        `json:"active_mtu"`
	Types     []gid.Type  `json:"types"`
	TableLen  int         `json:"table_len"`
	Used      int         `json:"used"`
	Entries   []gid.Entry `json:"entries"`
	// Matches says whether the table equals the one the kernel would build
	// from the current netdevs (null when not compared: a predicted or
	// InfiniBand port, or no prediction possible — DiffError says why);
	// Diff lists the differences.
	Matches   *bool        `json:"matches"`
	Diff      []gid.Change `json:"diff"`
	DiffError *string      `json:"diff_error"`
}

func newGidsCmd() *cobra.Command {
	var src hostFlags
	var all bool
	var format string
	c := &cobra.Command{
		Use:   "gids",
		Short: "Show the GID tables: every entry with its netdev, VLAN, RoCE version and address",
		Long: `gids prints one row per GID table entry of every RDMA port: index, GID, RoCE
version, address kind, the netdev that owns the address, the VLAN its frames
carry (the outermost tag, which the first switch sees, and the whole chain for
QinQ), the real netdev below, MAC, MTU, state and network namespace. Empty slots
are shown with --all.

Entries whose netdev is not in this network namespace are marked netns "other":
their GID exists, but applications here cannot use it. With --netns NAME the
netdevs are looked up in that namespace instead (needs root).

After the table, gids compares it with the table the kernel would build from the
current netdevs and addresses and lists stale, missing and moved entries.

On a host without RDMA devices, gids says so and shows the table Soft-RoCE
(rdma link add rxe0 type rxe netdev DEV) would get on each Ethernet netdev.

--from FILE reads a snapshot written by 'roce-probe collect' (on this or any
other machine) instead of the live host. Reads need no privileges. See
docs/gids.md.`,
		Example: `  roce-probe gids
  roce-probe gids --dev mlx5_0 --port 1 --all
  roce-probe gids -o json
  roce-probe gids --from node1.json.gz`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := src.view(0)
			if err != nil {
				return err
			}
			if err := src.checkDev(v); err != nil {
				return err
			}
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			src.notePredicted(errw, v)
			ports := src.ports(v)
			doc := gidsJSON{Predicted: v.Predicted, Ports: make([]gidsPortJSON, 0, len(ports))}
			for _, p := range ports {
				doc.Ports = append(doc.Ports, gidsPort(p, v, all))
			}
			if format == "json" {
				return writeJSONIndent(out, doc)
			}
			writeGidsTable(out, doc, all)
			return nil
		},
	}
	src.add(c, hostFlagSet{dev: true, port: true})
	c.Flags().BoolVar(&all, "all", false, "show empty slots too")
	outputVar(c.Flags(), &format, "table", "json")
	return c
}

// gidsPort is one port's document: its header, its entries (empty slots
// with all), and the diff against the kernel's fresh scan.
func gidsPort(p gid.Port, v *host.View, all bool) gidsPortJSON {
	j := gidsPortJSON{Device: p.Device, Port: p.Port, State: null.String(p.State), PhysState: null.String(p.PhysState),
		LinkLayer: null.String(p.LinkLayer), Netdev: null.String(p.Netdev), ActiveMTU: null.Int(p.ActiveMTU),
		Types: p.Types, TableLen: len(p.Entries), Entries: []gid.Entry{}}
	if j.Types == nil {
		j.Types = []gid.Type{}
	}
	for _, e := range p.Entries {
		if !e.Empty {
			j.Used++
		}
		if all || !e.Empty {
			j.Entries = append(j.Entries, e)
		}
	}
	diff, ok, err := v.Diff(p)
	if !ok {
		return j
	}
	if err != nil {
		j.DiffError = null.String(err.Error())
		return j
	}
	j.Diff = diff
	m := len(j.Diff) == 0
	j.Matches = &m
	return j
}

func writeGidsTable(w io.Writer, doc gidsJSON, all bool) {
	for i, p := range doc.Ports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var types []string
		for _, ty := range p.Types {
			types = append(types, ty.String())
		}
		what := "port"
		if doc.Predicted {
			what = "predicted port"
		}
		fmt.Fprintf(w, "%s %s %d: state %s, %s, netdev %s, active MTU %s, types %s, %d of %d slots used\n",
			p.Device, what, p.Port, ptrOr(p.State, "-", str), ptrOr(p.LinkLayer, "-", str), ptrOr(p.Netdev, "-", str),
			ptrOr(p.ActiveMTU, "-", strconv.Itoa), orDash(strings.Join(types, "+")), p.Used, p.TableLen)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "INDEX\tGID\tTYPE\tKIND\tNETDEV\tVLAN\tREAL\tMAC\tMTU\tSTATE\tNETNS\tDEFAULT")
		for _, e := range p.Entries {
			if e.Empty {
				if all {
					fmt.Fprintf(tw, "%d\t(empty)\n", e.Index)
				}
				continue
			}
			def := ""
			if e.Default {
				def = "default"
			}
			mtu := "-"
			if e.MTU != 0 {
				mtu = fmt.Sprint(e.MTU)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Index, e.GID, e.Type, e.Kind,
				orDash(e.Netdev), vlanChainCol(e), orDash(e.RealNetdev), orDash(e.MAC.String()), mtu, orDash(e.State), orDash(e.Netns), def)
		}
		tw.Flush()
		switch {
		case p.DiffError != nil:
			fmt.Fprintf(w, "# no prediction: %s\n", *p.DiffError)
		case p.Matches == nil:
		case *p.Matches:
			fmt.Fprintln(w, "# matches the table the kernel builds from the current netdevs")
		default:
			fmt.Fprintf(w, "# differs from the table the kernel would build from the current netdevs (%d):\n", len(p.Diff))
			for _, c := range p.Diff {
				fmt.Fprintf(w, "#   %s\n", c)
			}
		}
	}
}

func str(s string) string { return s }

func mtuText(m int) string {
	if m == 0 {
		return "-"
	}
	return fmt.Sprint(m)
}

// vlanChainCol shows the VLAN ID, and the whole chain when it has more
// than one tag ("10 (802.1ad:1000 10)").
func vlanChainCol(e gid.Entry) string {
	s := vlanCol(e)
	if len(e.VLANChain) > 1 {
		var tags []string
		for _, t := range e.VLANChain {
			tags = append(tags, t.String())
		}
		s += " (" + strings.Join(tags, " ") + ")"
	}
	return s
}

// checkOutputDir returns a usage error naming flag when the file path
// cannot be written: its directory is missing, or path is a directory.
// Commands call it before they read anything, so a typo in an output path
// is reported as bad input whatever the machine has.
func checkOutputDir(flag, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usagef("%s %q is a directory: want a file name", flag, path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return usagef("%s %q: directory %s: %v: want a file in an existing directory", flag, path, dir, pathErr(err))
	}
	if !st.IsDir() {
		return usagef("%s %q: %s is not a directory: want a file in an existing directory", flag, path, dir)
	}
	return nil
}

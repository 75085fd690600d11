package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/spf13/cobra"
)

func init() { register(newGidsCmd) }

func newGidsCmd() *cobra.Command {
	var src gidSource
	var all bool
	var format, saveLinks string
	c := &cobra.Command{
		Use:   "gids",
		Short: "Show the GID tables: every entry with its netdev, VLAN, RoCE version and address",
		Long: `gids prints one row per GID table entry of every RDMA port: index, GID, RoCE
version, address kind, the netdev that owns the address, the VLAN ID its frames
carry (and the whole tag chain for QinQ), the real netdev below, MAC, MTU, state
and network namespace. Empty slots are shown with --all.

Entries whose netdev is not in this network namespace are marked netns "other":
their GID exists, but applications here cannot use it. With --netns NAME the
netdevs are looked up in that namespace instead (needs root).

After the table, gids compares it with the table the kernel would build from the
current netdevs and addresses and lists stale, missing and moved entries.

On a machine without RDMA devices, gids says so and shows the table Soft-RoCE
(rdma link add rxe0 type rxe netdev DEV) would get on each Ethernet netdev.

Reads need no privileges. See docs/gids.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := outputFormat(format, "table", "json")
			if err != nil {
				return err
			}
			if saveLinks != "" {
				if err := checkOutputDir("--save-links", saveLinks); err != nil {
					return err
				}
			}
			t, err := src.load()
			if err != nil {
				return err
			}
			defer t.close()
			if saveLinks != "" {
				if err := writeFileAtomic(saveLinks, t.snap); err != nil {
					return usagef("--save-links %s: %v", saveLinks, err)
				}
			}
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			ports := t.ports
			predicted := false
			if ports == nil {
				predicted = true
				if ports, err = predictedPorts(t.snap); err != nil {
					return err
				}
				fmt.Fprintf(errw, "roce-probe: no RDMA devices on this machine (%s is missing or empty).\n", src.ibDir())
				if len(ports) == 0 {
					fmt.Fprintln(errw, "roce-probe: no Ethernet netdev to predict a table for either.")
				} else {
					fmt.Fprintln(errw, "roce-probe: showing the tables Soft-RoCE would get (rdma link add rxe_DEV type rxe netdev DEV; RoCE v2 only — a ConnectX NIC adds a RoCE v1 twin of every entry).")
				}
			}
			var entries []gid.Entry
			for _, p := range ports {
				for _, e := range p.Entries {
					if all || !e.Empty {
						entries = append(entries, e)
					}
				}
			}
			if f == "json" {
				if entries == nil {
					entries = []gid.Entry{}
				}
				return writeJSONIndent(out, entries)
			}
			writeGidsTable(out, ports, all, predicted, t)
			return nil
		},
	}
	src.addFlags(c)
	c.Flags().BoolVar(&all, "all", false, "show empty slots too")
	c.Flags().StringVar(&saveLinks, "save-links", "", "also write the netdev snapshot used to this JSON file (for --links on another machine)")
	c.Flags().StringVarP(&format, "output", "o", "table", "output format: table or json")
	return c
}

func writeGidsTable(w io.Writer, ports []gid.Port, all, predicted bool, t *tables) {
	for i, p := range ports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		used := 0
		for _, e := range p.Entries {
			if !e.Empty {
				used++
			}
		}
		var types []string
		for _, ty := range p.Types {
			types = append(types, ty.String())
		}
		what := "port"
		if predicted {
			what = "predicted port"
		}
		fmt.Fprintf(w, "%s %s %d: state %s, %s, netdev %s, active MTU %s, types %s, %d of %d slots used\n",
			p.Device, what, p.Port, orDash(p.State), orDash(p.LinkLayer), orDash(p.Netdev), mtuText(p.ActiveMTU),
			orDash(strings.Join(types, "+")), used, len(p.Entries))
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
		if predicted || p.LinkLayer != "Ethernet" || p.Netdev == "" {
			continue
		}
		pred, err := gid.Predict(gid.SpecOf(p), t.snap)
		if err != nil {
			fmt.Fprintf(w, "# no prediction: %v\n", err)
			continue
		}
		changes := gid.Diff(pred.Entries, p.Entries)
		if len(changes) == 0 {
			fmt.Fprintln(w, "# matches the table the kernel builds from the current netdevs")
			continue
		}
		fmt.Fprintf(w, "# differs from the table the kernel would build from the current netdevs (%d):\n", len(changes))
		for _, c := range changes {
			fmt.Fprintf(w, "#   %s\n", c)
		}
	}
}

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

// writeFileAtomic writes v as indented JSON to a temporary file next to
// path and renames it into place, so path is never half-written.
func writeFileAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".roce-probe-*.json")
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

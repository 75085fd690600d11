package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/roce-probe/roce-probe/host"
)

// Shell completion. cobra's `completion bash|zsh|fish|powershell` writes a
// script that asks the binary itself (the hidden `__complete` command) for
// the words that may come next: command names, flag names, and the values
// registered here for every flag of every command:
//
//   - enumerations (-o, --roce, --sweep, --path, --driver, ...): their
//     names, from the flag's own value (the one list the parser accepts);
//   - --dev, --port, --gid-index, --netdev, --netns, --vlan: the RDMA
//     devices, ports, GID table entries, netdevs, namespaces and VLAN IDs
//     of the host the command would read: the --from snapshot when one is
//     on the command line, else the live host (what `gids` shows);
//   - files for the flags and arguments that name one (--from, --pcap,
//     --config, decode's capture), nothing for the others (a number, an
//     address: the shell must not offer file names).
//
// Completion parses the command line once more for every request, so
// the "given twice" check of single-value flags is off while completing
// (completing reports; it does not run the command). And every flag name
// is offered: cobra would offer only the required flags while one is
// missing (`ah --from<TAB>` would give --from-wc alone); their help says
// "(required)".

// The examples of the completion command and its shells: how to load
// the script now, and for every new shell.
var (
	shellExamples = map[string]string{
		"bash":       "source <(roce-probe completion bash)\nroce-probe completion bash > /etc/bash_completion.d/roce-probe",
		"zsh":        "source <(roce-probe completion zsh)\nroce-probe completion zsh > \"${fpath[1]}/_roce-probe\"",
		"fish":       "roce-probe completion fish | source\nroce-probe completion fish > ~/.config/fish/completions/roce-probe.fish",
		"powershell": "roce-probe completion powershell | Out-String | Invoke-Expression",
	}
	completionExamples = "  " + strings.ReplaceAll(strings.Join([]string{shellExamples["bash"], shellExamples["zsh"], shellExamples["fish"]}, "\n"), "\n", "\n  ")
)

// completing says whether args ask for completions (cobra's __complete
// and __completeNoDesc).
func completing(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}

// forCompletion removes, from c and its subcommands, setOnce's wrappers
// and what makes cobra offer required flags alone: the required mark
// (MarkFlagRequired) and the one-required groups (MarkFlagsOneRequired,
// whose annotation cobra does not export).
func forCompletion(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if o, ok := f.Value.(*onceValue); ok {
			f.Value = o.Value
		}
		delete(f.Annotations, cobra.BashCompOneRequiredFlag)
		delete(f.Annotations, "cobra_annotation_one_required")
	})
	for _, s := range c.Commands() {
		forCompletion(s)
	}
}

// completer returns the completions of one flag's value on cmd (whose
// flags are parsed) for the word typed so far.
type completer func(cmd *cobra.Command, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective)

// hostCompleters complete the flags whose values come from the host, by
// flag name: the name means the same in every command.
var hostCompleters = map[string]completer{
	"dev":       completeDev,
	"port":      completePort,
	"gid-index": completeGIDIndex,
	"netdev":    completeNetdev,
	"netns":     completeNetns,
	"vlan":      completeVLAN,
}

// fileFlags are the flags that name a file to read or write; the value is
// the extensions offered (none: any file).
var fileFlags = map[string][]string{
	"from":       {"json", "gz"},
	"pcap":       {"pcap"},
	"config":     nil,
	"peers-file": nil,
	"out":        nil,
}

// registerCompletions registers the completion of every flag value and
// positional argument of c and its subcommands.
func registerCompletions(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if _, ok := c.GetFlagCompletionFunc(f.Name); ok {
			return
		}
		_ = c.RegisterFlagCompletionFunc(f.Name, flagCompletion(c, f))
	})
	if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 {
		switch c.Name() {
		case "decode":
			c.ValidArgsFunction = fileArgs("pcap", "pcapng", "cap")
		case "fabric":
			c.ValidArgsFunction = fileArgs() // snapshot files and directories
		default:
			c.ValidArgsFunction = cobra.NoFileCompletions
		}
	}
	for _, s := range c.Commands() {
		registerCompletions(s)
	}
}

func fileArgs(exts ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(exts) == 0 {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return exts, cobra.ShellCompDirectiveFilterFileExt
	}
}

// flagCompletion is the completion function of flag f of command c.
func flagCompletion(c *cobra.Command, f *pflag.Flag) cobra.CompletionFunc {
	if e, ok := unwrap(f.Value).(interface{ choices() []string }); ok {
		names := e.choices()
		if f.Name == "gid-index" { // ah's takes auto too (an enum would not)
			names = nil
		}
		if len(names) > 0 {
			return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return matching(names, toComplete), cobra.ShellCompDirectiveNoFileComp
			}
		}
	}
	if hc := hostCompleters[f.Name]; hc != nil {
		return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return hc(cmd, toComplete)
		}
	}
	if exts, ok := fileFlags[f.Name]; ok && (f.Value.Type() == "string" || c.Name() == "fabric") {
		if c.Name() == "fabric" { // files and directories of snapshots
			exts = nil
		}
		return fileArgs(exts...)
	}
	return cobra.NoFileCompletions
}

// unwrap is a flag's own value, without setOnce's wrapper.
func unwrap(v pflag.Value) pflag.Value {
	if o, ok := v.(*onceValue); ok {
		return o.Value
	}
	return v
}

// choices lists an enum flag's names, for completion.
func (v *enumValue[T]) choices() []string { return v.shown }

// matching keeps the words that start with prefix.
func matching(words []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, w := range words {
		name, _, _ := strings.Cut(w, "\t")
		if strings.HasPrefix(name, prefix) {
			out = append(out, w)
		}
	}
	return out
}

// flagString is the value of cmd's flag name as given ("" when the
// command has no such flag or it was not given).
func flagString(cmd *cobra.Command, name string) string {
	f := cmd.Flags().Lookup(name)
	if f == nil || !f.Changed {
		return ""
	}
	return f.Value.String()
}

// completionView reads the host cmd would read: --from's snapshot (not
// standard input: that is the terminal here) or the live host, in --netns.
func completionView(cmd *cobra.Command) (*host.View, bool) {
	h := hostFlags{netns: flagString(cmd, "netns"), cmd: cmd}
	if f := cmd.Flags().Lookup("from"); f != nil && f.Value.Type() == "string" {
		h.from = flagString(cmd, "from")
	}
	if h.from == "-" {
		return nil, false
	}
	v, err := h.view(0)
	if err != nil {
		cobra.CompDebugln(err.Error(), false)
		return nil, false
	}
	return v, true
}

// selectedPorts are the ports of the view --dev (when given) selects.
func selectedPorts(cmd *cobra.Command, v *host.View, withPort bool) []int {
	dev := flagString(cmd, "dev")
	port := 0
	if withPort {
		port, _ = strconv.Atoi(flagString(cmd, "port"))
		if port == 0 {
			// The command's default port (check, ah, send: 1), if any.
			if f := cmd.Flags().Lookup("port"); f != nil {
				port, _ = strconv.Atoi(f.DefValue)
			}
		}
	}
	var out []int
	for i, p := range v.Ports {
		if (dev == "" || p.Device == dev) && (port == 0 || p.Port == port) {
			out = append(out, i)
		}
	}
	return out
}

func completeDev(cmd *cobra.Command, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	v, ok := completionView(cmd)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var words []string
	for _, d := range v.Devices() {
		desc := "driver " + string(v.Driver(d).Driver)
		if v.Predicted {
			desc = "predicted Soft-RoCE device (the host has no RDMA device)"
		}
		words = append(words, cobra.CompletionWithDesc(d, desc))
	}
	return matching(words, toComplete), cobra.ShellCompDirectiveNoFileComp
}

func completePort(cmd *cobra.Command, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	v, ok := completionView(cmd)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var words []string
	seen := map[int]bool{}
	for _, i := range selectedPorts(cmd, v, false) {
		p := v.Ports[i]
		if seen[p.Port] {
			continue
		}
		seen[p.Port] = true
		desc := strings.TrimSpace(p.Device + " " + p.State + " " + p.Netdev)
		words = append(words, cobra.CompletionWithDesc(strconv.Itoa(p.Port), desc))
	}
	return matching(words, toComplete), cobra.ShellCompDirectiveNoFileComp
}

func completeGIDIndex(cmd *cobra.Command, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var words []string
	if f := cmd.Flags().Lookup("gid-index"); f != nil && f.Value.Type() == "string" {
		words = append(words, cobra.CompletionWithDesc("auto", "the entry select would pick for --dst"))
	}
	v, ok := completionView(cmd)
	if !ok {
		return matching(words, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	for _, i := range selectedPorts(cmd, v, true) {
		for _, e := range v.Ports[i].Entries {
			if e.Empty {
				continue
			}
			desc := fmt.Sprintf("%s %s %s", e.Type, e.GID, orDash(e.Netdev))
			words = append(words, cobra.CompletionWithDesc(strconv.Itoa(e.Index), desc))
		}
	}
	return matching(words, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

func completeNetdev(cmd *cobra.Command, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	v, ok := completionView(cmd)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var words []string
	for _, l := range v.NS.Links {
		words = append(words, l.Name)
	}
	return matching(words, toComplete), cobra.ShellCompDirectiveNoFileComp
}

func completeNetns(cmd *cobra.Command, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var words []string
	if from := flagString(cmd, "from"); from != "" {
		if from == "-" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		s, err := host.Load(from)
		if err != nil {
			cobra.CompDebugln(err.Error(), false)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		for _, ns := range s.Namespaces {
			if ns.Netns != "" {
				words = append(words, ns.Netns)
			}
		}
	} else {
		// What 'ip netns list' lists: the bind mounts in /run/netns.
		ents, _ := os.ReadDir("/run/netns")
		for _, e := range ents {
			words = append(words, e.Name())
		}
	}
	return matching(words, toComplete), cobra.ShellCompDirectiveNoFileComp
}

func completeVLAN(cmd *cobra.Command, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	words := []string{cobra.CompletionWithDesc("none", "untagged entries")}
	v, ok := completionView(cmd)
	if !ok {
		return matching(words, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	var ids []int
	for _, i := range selectedPorts(cmd, v, false) {
		for _, e := range v.Ports[i].Entries {
			if e.VLAN != nil && !slices.Contains(ids, int(*e.VLAN)) {
				ids = append(ids, int(*e.VLAN))
			}
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		words = append(words, strconv.Itoa(id))
	}
	return matching(words, toComplete), cobra.ShellCompDirectiveNoFileComp
}

package main

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/roce-probe/roce-probe/qos"
)

// Every numeric flag of every command is registered with intVar,
// durationVar or floatVar: the flag's value knows its name and the range
// the flag allows, so a bad value is rejected while the command line is
// parsed, before any device is touched, with one message shape for all
// commands:
//
//	--sl "x" is not an integer: want 0..15
//	--sl 16 is out of range: want 0..15
//	--interval "5" is not a duration: want 0s..1h (e.g. 100ms, 2s, 1m)
//
// flagError (the root command's flag error function) passes these errors
// through unchanged and rewrites pflag's own ones (a flag without its
// value, a bool flag given "maybe") into the same shape. checkEmptyFlags
// refuses a string flag given "" (unless allowEmpty marks it), and
// checkFlagGroups a command line that breaks a flag group. What only
// the command can check (an enum such as --path, a range that depends on
// the device, flags that contradict each other) it checks in RunE, before
// reading any device, with usagef and the same shape: the flag, the value
// given, what is allowed.

// integer is the types an integer flag can fill.
type integer interface {
	~int | ~int64 | ~uint8 | ~uint16 | ~uint32
}

// intValue is a pflag.Value for an integer flag with an allowed range.
// It accepts decimal and 0x hex.
type intValue[T integer] struct {
	p      *T
	name   string // "--sl"
	lo, hi int64
	hex    bool   // show the range in hex (bit fields: QPNs, Q_Keys, flow labels)
	note   string // appended to errors, e.g. "(0: random)"
}

// intVar registers an integer flag that allows lo..hi. The returned value
// can carry a note for its errors.
func intVar[T integer](fs *pflag.FlagSet, p *T, name string, def T, lo, hi int64, usage string) *intValue[T] {
	*p = def
	// Bit fields wider than 16 bits (flow label, QPN, PSN, Q_Key) are
	// written in hex: their maximum is 2^n - 1.
	v := &intValue[T]{p: p, name: "--" + name, lo: lo, hi: hi, hex: hi > 0xFFFF && hi&(hi+1) == 0}
	fs.Var(v, name, usage)
	return v
}

func (v *intValue[T]) Set(s string) error {
	n, err := parseInt(v.name, s, v.lo, v.hi, v.hex, v.note)
	if err != nil {
		return err
	}
	*v.p = T(n)
	return nil
}

func (v *intValue[T]) String() string {
	if v.hex && int64(*v.p) > 9 {
		return fmt.Sprintf("%#x", int64(*v.p))
	}
	return strconv.FormatInt(int64(*v.p), 10)
}

func (v *intValue[T]) Type() string { return "int" }

func (v *intValue[T]) want() string {
	return "an integer " + rangeText(v.lo, v.hi, v.hex) + suffix(v.note)
}

// rangeText is "0..15", "0..0xfffff" or "≥ 1".
func rangeText(lo, hi int64, hex bool) string {
	switch {
	case hi == math.MaxInt64:
		return fmt.Sprintf("≥ %d", lo)
	case hex:
		return fmt.Sprintf("%d..%#x", lo, hi)
	default:
		return fmt.Sprintf("%d..%d", lo, hi)
	}
}

func suffix(note string) string {
	if note == "" {
		return ""
	}
	return " " + note
}

// parseInt parses the value s of the flag or field name (decimal, or hex
// with 0x) and checks it is in lo..hi. Its errors are the usage errors of
// every integer flag; commands call it directly for values that are not
// plain flags (--gid-index auto, the items of --wc).
func parseInt(name, s string, lo, hi int64, hex bool, note string) (int64, error) {
	t := strings.TrimSpace(s)
	digits, base, neg := t, 10, false
	if strings.HasPrefix(digits, "-") {
		digits, neg = digits[1:], true
	} else {
		digits = strings.TrimPrefix(digits, "+")
	}
	if len(digits) > 2 && (digits[:2] == "0x" || digits[:2] == "0X") {
		digits, base = digits[2:], 16
	}
	// Only digits: ParseUint would also take "_" separators with base 0,
	// and signs twice over.
	u, err := strconv.ParseUint(digits, base, 64)
	r := rangeText(lo, hi, hex)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		more := ""
		if hex {
			more = " (decimal or 0x hex)"
		}
		return 0, usagef("%s %q is not an integer: want %s%s%s", name, s, r, more, suffix(note))
	}
	v := int64(u)
	if neg {
		v = -v
	}
	if err != nil || u > math.MaxInt64 || v < lo || v > hi {
		return 0, usagef("%s %s is out of range: want %s%s", name, t, r, suffix(note))
	}
	return v, nil
}

// durationValue is a pflag.Value for a duration flag with an allowed
// range: lo..hi, or more than lo when open; hi 0 means no upper bound.
type durationValue struct {
	p      *time.Duration
	name   string
	lo, hi time.Duration
	open   bool   // lo itself is not allowed
	note   string // appended to errors
}

// durationVar registers a duration flag that allows lo..hi (hi 0: no upper
// bound); with open, lo itself is excluded ("more than 0s").
func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, def, lo, hi time.Duration, open bool, usage string) *durationValue {
	*p = def
	v := &durationValue{p: p, name: "--" + name, lo: lo, hi: hi, open: open}
	fs.Var(v, name, usage)
	return v
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return usagef("%s %q is not a duration: want %s (e.g. 100ms, 2s, 1m)%s", v.name, s, v.rangeText(), suffix(v.note))
	}
	if d < v.lo || (v.open && d == v.lo) || (v.hi > 0 && d > v.hi) {
		return usagef("%s %s is out of range: want %s%s", v.name, strings.TrimSpace(s), v.rangeText(), suffix(v.note))
	}
	*v.p = d
	return nil
}

func (v *durationValue) rangeText() string {
	lo, hi := shortDuration(v.lo), shortDuration(v.hi)
	switch {
	case v.open && v.hi > 0:
		return fmt.Sprintf("more than %s, at most %s", lo, hi)
	case v.open:
		return fmt.Sprintf("more than %s", lo)
	case v.hi > 0:
		return fmt.Sprintf("%s..%s", lo, hi)
	default:
		return fmt.Sprintf("%s or more", lo)
	}
}

// shortDuration is d as time.Duration.String writes it, without the zero
// minutes and seconds of round values: 1h, 1m, 90s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func (v *durationValue) String() string { return v.p.String() }
func (v *durationValue) Type() string   { return "duration" }
func (v *durationValue) want() string   { return "a duration, " + v.rangeText() + suffix(v.note) }

// floatValue is a pflag.Value for a number flag that allows lo..hi.
type floatValue struct {
	p      *float64
	name   string
	lo, hi float64
	note   string
}

// floatVar registers a number flag that allows lo..hi.
func floatVar(fs *pflag.FlagSet, p *float64, name string, def, lo, hi float64, usage string) *floatValue {
	*p = def
	v := &floatValue{p: p, name: "--" + name, lo: lo, hi: hi}
	fs.Var(v, name, usage)
	return v
}

func (v *floatValue) Set(s string) error {
	t := strings.TrimSpace(s)
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return usagef("%s %q is not a number: want %g..%g%s", v.name, s, v.lo, v.hi, suffix(v.note))
	}
	if err != nil || !(f >= v.lo && f <= v.hi) { // also rejects NaN
		return usagef("%s %s is out of range: want %g..%g%s", v.name, t, v.lo, v.hi, suffix(v.note))
	}
	*v.p = f
	return nil
}

func (v *floatValue) String() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }
func (v *floatValue) Type() string   { return "number" }
func (v *floatValue) want() string {
	return fmt.Sprintf("a number %g..%g%s", v.lo, v.hi, suffix(v.note))
}

// flagError is the flag error function of every command. The values above
// already return complete usage errors; pflag's own errors (a flag given
// without its value, a bool flag given "maybe", an unknown flag, a
// malformed flag) are told apart by their types and rewritten to name the
// flag, the value and what is allowed. An error of no type known here
// keeps its text.
func flagError(c *cobra.Command, err error) error {
	var ue usageError
	if errors.As(err, &ue) {
		return ue
	}
	var vr *pflag.ValueRequiredError
	if errors.As(err, &vr) {
		f := vr.GetFlag()
		return usagef("%s needs a value: want %s", flagNames(f), flagWant(f))
	}
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		f := iv.GetFlag()
		return usagef("%s %q is not valid: want %s", flagNames(f), iv.GetValue(), flagWant(f))
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		if sh := ne.GetSpecifiedShortnames(); sh != "" {
			return usagef("unknown flag -%s (in -%s): see '%s --help' for the flags it takes", ne.GetSpecifiedName(), sh, c.CommandPath())
		}
		return usagef("unknown flag --%s: see '%s --help' for the flags it takes", ne.GetSpecifiedName(), c.CommandPath())
	}
	var se *pflag.InvalidSyntaxError
	if errors.As(err, &se) {
		return usagef("%q is not a flag: want --name value, --name=value or -x value (see '%s --help')", se.GetSpecifiedFlag(), c.CommandPath())
	}
	return usageError{fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
}

func flagNames(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "-" + f.Shorthand + "/--" + f.Name
	}
	return "--" + f.Name
}

// flagWant says what a flag allows: the range of the values above, or the
// flag's usage text.
func flagWant(f *pflag.Flag) string {
	if w, ok := f.Value.(interface{ want() string }); ok {
		return w.want()
	}
	if f.Value.Type() == "bool" {
		return "true or false (or the flag alone for true)"
	}
	return f.Usage
}

// emptyOK is the annotation of string flags for which an empty value means
// something (ah --payload ""): every other string flag given "" is bad
// input rather than the same as leaving it out.
const emptyOK = "roce-probe/empty-ok"

// allowEmpty marks the string flag name of c as taking "".
func allowEmpty(c *cobra.Command, name string) {
	_ = c.Flags().SetAnnotation(name, emptyOK, []string{"true"})
}

// checkEmptyFlags is the root's PersistentPreRunE: a string flag given
// explicitly as "" is refused (--netdev "" would otherwise mean "every
// netdev", --links "" "read netlink").
func checkEmptyFlags(c *cobra.Command, _ []string) error {
	var err error
	c.Flags().Visit(func(f *pflag.Flag) {
		if err == nil && f.Value.Type() == "string" && f.Value.String() == "" && f.Annotations[emptyOK] == nil {
			err = usagef("%s \"\" is empty: leave the flag out or give a value (%s)", flagNames(f), f.Usage)
		}
	})
	return err
}

// noArgs is the Args of commands that take no positional arguments.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments: got %q (options are written --name value; see '%s --help')",
			c.CommandPath(), args[0], c.CommandPath())
	}
	return nil
}

// rootArgs is the root command's Args: an argument there is a misspelt
// command, named with the commands cobra finds close to it.
func rootArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, which only its own message sets
	}
	if similar := c.SuggestionsFor(args[0]); len(similar) > 0 {
		msg += " (did you mean " + strings.Join(similar, " or ") + "?)"
	}
	return usagef("%s: want one of %s", msg, subcommandNames(c))
}

// subcommandArgs is the Args of commands that only group subcommands
// (lab): an argument there is a misspelt subcommand.
func subcommandArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q: want one of %s", args[0], c.CommandPath(), subcommandNames(c))
	}
	return nil
}

// needsSubcommand is the RunE of commands that only group subcommands:
// given none, they are incomplete input (not a request for help).
func needsSubcommand(c *cobra.Command, _ []string) error {
	return usagef("%s needs a command: want one of %s", c.CommandPath(), subcommandNames(c))
}

func subcommandNames(c *cobra.Command) string {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	return strings.Join(names, ", ")
}

// enumValue is a pflag.Value for a flag that takes one of a fixed set of
// names, parsed into the typed value once, while the command line is
// parsed: --path, --driver, --sweep, --roce, --family, --behaviour and
// every command's -o.
type enumValue[T comparable] struct {
	p      *T
	name   string
	names  []string // accepted names, the canonical one of each value first
	values []T
	shown  []string // the names listed in errors and help
}

// enumVar registers an enum flag. choices pairs each accepted name with
// its value; names after the first for the same value are aliases, not
// listed in errors.
func enumVar[T comparable](fs *pflag.FlagSet, p *T, name string, def T, usage string, choices ...enumChoice[T]) *enumValue[T] {
	v := newEnum(p, "--"+name, def, choices...)
	fs.Var(v, name, usage)
	return v
}

// newEnum is the value enumVar registers; shown is the flag's name in
// errors.
func newEnum[T comparable](p *T, shown string, def T, choices ...enumChoice[T]) *enumValue[T] {
	*p = def
	v := &enumValue[T]{p: p, name: shown}
	seen := map[T]bool{}
	for _, c := range choices {
		v.names = append(v.names, c.name)
		v.values = append(v.values, c.value)
		if !seen[c.value] {
			seen[c.value] = true
			v.shown = append(v.shown, c.name)
		}
	}
	return v
}

// enumChoice is one accepted name of an enum flag and its value.
type enumChoice[T comparable] struct {
	name  string
	value T
}

func choice[T comparable](name string, value T) enumChoice[T] { return enumChoice[T]{name, value} }

func (v *enumValue[T]) Set(s string) error {
	t := strings.TrimSpace(s)
	for i, n := range v.names {
		if strings.EqualFold(n, t) {
			*v.p = v.values[i]
			return nil
		}
	}
	return usagef("%s %q is not known: want %s", v.name, s, v.want())
}

func (v *enumValue[T]) String() string {
	for i, x := range v.values {
		if x == *v.p {
			return v.names[i]
		}
	}
	return ""
}

func (v *enumValue[T]) Type() string { return "string" }
func (v *enumValue[T]) want() string { return orList(v.shown) }

// orList is "a, b or c".
func orList(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// outputVar registers -o/--output as an enum of the formats a command
// prints; the first is the default. Its errors name it -o, as it is
// usually written.
func outputVar(fs *pflag.FlagSet, p *string, formats ...string) {
	var cs []enumChoice[string]
	for _, f := range formats {
		cs = append(cs, choice(f, f))
	}
	// The shorthand must be given when the flag is registered: pflag
	// indexes shorthands then (setting Flag.Shorthand afterwards leaves
	// -o unknown).
	fs.VarP(newEnum(p, "-o", formats[0], cs...), "output", "o", "output format: "+orList(formats))
}

// onceValue wraps the value of every flag that takes one value: given a
// second time, it is bad input rather than a silent override ("--sl 3 ...
// --sl 5" would otherwise mean 5).
type onceValue struct {
	pflag.Value
	name  string
	first string
	set   bool
}

func (o *onceValue) Set(s string) error {
	if o.set {
		return usagef("%s given twice (%q, then %q): give it once", o.name, o.first, s)
	}
	o.set, o.first = true, s
	return o.Value.Set(s)
}

// want passes the wrapped value's allowed range through to flagWant.
func (o *onceValue) want() string {
	if w, ok := o.Value.(interface{ want() string }); ok {
		return w.want()
	}
	return ""
}

// setOnce wraps every single-value flag of c and its subcommands in a
// onceValue. Bool flags (given twice they still mean true) and
// list-valued flags are left alone.
func setOnce(c *cobra.Command) {
	c.Flags().VisitAll(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "bool", "stringSlice", "stringArray", "intSlice":
			return
		}
		if _, ok := f.Value.(*onceValue); ok {
			return
		}
		f.Value = &onceValue{Value: f.Value, name: flagNames(f)}
	})
	for _, s := range c.Commands() {
		setOnce(s)
	}
}

// Flag groups. Every group of flags that must, may not or must not be
// given together is declared with flagsExclusive, flagsTogether,
// flagsOneRequired or flagRequired, which record it on the command (the
// flagGroups annotation) and also tell cobra (its completion then leaves
// out a flag that cannot be added and offers a required one first).
// checkFlagGroups, run after the command's own PreRunE (checkGroupsFirst),
// where cobra would check the groups but before it does, refuses a
// command line that breaks a group with a message in the shape of every
// other usage error, so cobra's checks (and their English wording) never
// decide.

// flagGroupsKey is the annotation of a command that holds its groups, one
// per line: the kind, then the flag names, separated by spaces.
const flagGroupsKey = "roce-probe/flag-groups"

// Kinds of flag groups, in the order checkFlagGroups checks them (cobra's
// order: required flags, flags that go together, one required, exclusive).
const (
	groupRequired  = "required"
	groupTogether  = "together"
	groupOneOf     = "one-required"
	groupExclusive = "exclusive"
)

// flagGroup is one declared group.
type flagGroup struct {
	kind  string
	names []string
}

func addFlagGroup(c *cobra.Command, kind string, names []string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[flagGroupsKey] += kind + " " + strings.Join(names, " ") + "\n"
}

// flagsExclusive declares that at most one of names may be given.
func flagsExclusive(c *cobra.Command, names ...string) {
	addFlagGroup(c, groupExclusive, names)
	c.MarkFlagsMutuallyExclusive(names...)
}

// flagsTogether declares that names are given all or none.
func flagsTogether(c *cobra.Command, names ...string) {
	addFlagGroup(c, groupTogether, names)
	c.MarkFlagsRequiredTogether(names...)
}

// flagsOneRequired declares that at least one of names must be given.
func flagsOneRequired(c *cobra.Command, names ...string) {
	addFlagGroup(c, groupOneOf, names)
	c.MarkFlagsOneRequired(names...)
}

// flagRequired declares that name must be given.
func flagRequired(c *cobra.Command, name string) {
	addFlagGroup(c, groupRequired, []string{name})
	_ = c.MarkFlagRequired(name)
}

// checkGroupsFirst makes c and its subcommands check their flag groups
// after their PreRunE, as cobra does, but with checkFlagGroups: cobra's
// own checks, which come next, then find nothing to refuse.
func checkGroupsFirst(c *cobra.Command) {
	if len(flagGroups(c)) > 0 {
		pre, preE := c.PreRun, c.PreRunE
		c.PreRun = nil
		c.PreRunE = func(c *cobra.Command, args []string) error {
			if preE != nil {
				if err := preE(c, args); err != nil {
					return err
				}
			} else if pre != nil {
				pre(c, args)
			}
			return checkFlagGroups(c)
		}
	}
	for _, s := range c.Commands() {
		checkGroupsFirst(s)
	}
}

// flagGroups returns the groups declared on c.
func flagGroups(c *cobra.Command) []flagGroup {
	var out []flagGroup
	for _, l := range strings.Split(c.Annotations[flagGroupsKey], "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			out = append(out, flagGroup{kind: f[0], names: f[1:]})
		}
	}
	return out
}

// checkFlagGroups refuses a command line that breaks one of c's flag
// groups: the required flags first (all that are missing, in one
// message), then the groups of each kind in the order of their flag
// names, so that of two broken groups the same one is reported every time.
func checkFlagGroups(c *cobra.Command) error {
	groups := flagGroups(c)
	set := func(name string) bool {
		f := c.Flags().Lookup(name)
		return f != nil && f.Changed
	}
	dashed := func(names []string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = "--" + n
		}
		return out
	}
	var missing []string
	for _, g := range groups {
		if g.kind == groupRequired && !set(g.names[0]) {
			missing = append(missing, g.names[0])
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return usagef("%s %s required (see --help)", orAnd(dashed(missing)), isAre(len(missing)))
	}
	sort.SliceStable(groups, func(i, j int) bool {
		return strings.Join(groups[i].names, " ") < strings.Join(groups[j].names, " ")
	})
	for _, kind := range []string{groupTogether, groupOneOf, groupExclusive} {
		for _, g := range groups {
			if g.kind != kind {
				continue
			}
			var given, unset []string
			for _, n := range g.names {
				if set(n) {
					given = append(given, n)
				} else {
					unset = append(unset, n)
				}
			}
			sort.Strings(given)
			sort.Strings(unset)
			switch {
			case kind == groupTogether && len(given) > 0 && len(unset) > 0:
				return usagef("%s go together: %s %s missing", orAnd(dashed(g.names)), orAnd(dashed(unset)), isAre(len(unset)))
			case kind == groupOneOf && len(given) == 0:
				return usagef("one of %s is required", orList(dashed(g.names)))
			case kind == groupExclusive && len(given) > 1:
				// Exclusive flags may all be left out (qos with neither
				// --netdev nor --dev shows every port): at most one.
				return usagef("%s cannot be used together: give at most one of %s", orAnd(dashed(given)), orList(dashed(g.names)))
			}
		}
	}
	return nil
}

// isAre is the verb for n things.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// orAnd is "a, b and c".
func orAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// pathVar registers --path: how the address vector reaches the driver.
func pathVar(fs *pflag.FlagSet, p *qos.Path, usage string) {
	enumVar(fs, p, "path", "", usage, choice("user-ah", qos.PathUserAH), choice("kernel-ah", qos.PathKernelAH), choice("connected-qp", qos.PathConnectedQP))
}

// driverVar registers --driver: a driver's wire profile instead of the
// detected driver.
func driverVar(fs *pflag.FlagSet, p *qos.Driver, usage string) {
	var cs []enumChoice[qos.Driver]
	for _, d := range qos.Drivers {
		cs = append(cs, choice(string(d), d))
	}
	enumVar(fs, p, "driver", qos.DriverUnknown, usage, cs...)
}

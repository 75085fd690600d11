package agent

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxConfigSize bounds a configuration file.
const MaxConfigSize = 1 << 20

// LoadConfig reads the configuration file path onto c (ParseConfig); keys
// the file does not give keep c's values.
func LoadConfig(path string, c *Config) error {
	b, err := readLimited(path, MaxConfigSize)
	var big *tooLargeError
	switch {
	case errors.As(err, &big):
		return &ConfigError{File: path, Msg: fmt.Sprintf("is larger than %d bytes: want a configuration file", big.max)}
	case err != nil:
		return &ConfigError{File: path, Msg: fmt.Sprintf("cannot be read: %v", err)}
	}
	return ParseConfig(b, path, c)
}

// ReadConfig returns the configuration a document alone gives: the
// defaults, the document over them (ParseConfig), validated — what
// `roce-probe agent --config FILE` runs with when no flag overrides it.
// name is the file's name in messages.
func ReadConfig(data []byte, name string) (Config, error) {
	c := Default()
	if err := ParseConfig(data, name, &c); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, c.Purpose()
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParseConfig decodes a configuration document (YAML, or JSON, which is
// YAML) onto c, strictly: a key the configuration does not have, a key
// given twice, a value of the wrong type or a YAML alias is a
// *ConfigError naming the field, the line, the value and what is allowed.
// A null value keeps c's value. name is the file's name in messages. It
// does not validate ranges: call Config.Validate.
func ParseConfig(data []byte, name string, c *Config) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		return &ConfigError{File: name, Msg: "is not YAML or JSON: " + msg}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil // empty: the defaults
	}
	d := decoder{file: name}
	return d.value(doc.Content[0], reflect.ValueOf(c).Elem(), "")
}

// selectKeys are the keys ParseFlow puts under select: SelectConfig's yaml
// keys, derived so that a new one cannot be forgotten.
var selectKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range keysOf(reflect.TypeOf(SelectConfig{})) {
		m[k] = true
	}
	return m
}()

// ParseFlow decodes a flow given on the command line as
// KEY=VALUE[,KEY=VALUE...]: the keys of a flow in the file (name, tclass,
// sl, rdma_cm, tos, hop_limit) and of its select (roce, family, netdev, device,
// port, gid_index), flat. Errors name the key. It does not validate
// ranges (Config.Validate does).
func ParseFlow(s string) (FlowConfig, error) {
	var f FlowConfig
	top := &yaml.Node{Kind: yaml.MappingNode}
	sel := &yaml.Node{Kind: yaml.MappingNode}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return f, &ConfigError{Msg: fmt.Sprintf("%q is not KEY=VALUE: want e.g. name=rdma,netdev=eth0,family=ipv4,tclass=106,sl=3", kv)}
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}
		val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: strings.TrimSpace(v)}
		if selectKeys[k] {
			sel.Content = append(sel.Content, key, val)
		} else {
			top.Content = append(top.Content, key, val)
		}
	}
	if len(sel.Content) > 0 {
		top.Content = append(top.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "select"}, sel)
	}
	d := decoder{flat: true}
	return f, d.value(top, reflect.ValueOf(&f).Elem(), "")
}

// decoder walks a YAML node tree onto a value, by the yaml tags of its
// struct fields.
type decoder struct {
	file string
	flat bool // ParseFlow: name keys without the select. prefix
}

func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) error {
	return &ConfigError{File: d.file, Line: n.Line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

var durationType = reflect.TypeOf(time.Duration(0))

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func (d *decoder) value(n *yaml.Node, v reflect.Value, field string) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return d.fail(n, field, "YAML anchors and aliases are not allowed here: write the value out")
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // null: keep the value
	}
	switch {
	case v.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return d.fail(n, field, "is %s: want a mapping of %s", kindName(n), strings.Join(keysOf(v.Type()), ", "))
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return d.fail(k, field, "has a key that is %s: want one of %s", kindName(k), strings.Join(keysOf(v.Type()), ", "))
			}
			sub := k.Value
			if field != "" && !(d.flat && field == "select") {
				sub = field + "." + k.Value
			}
			if seen[k.Value] {
				return d.fail(k, sub, "given twice: want each key once")
			}
			seen[k.Value] = true
			fv, ok := fieldByTag(v, k.Value)
			if !ok {
				where := field
				if where == "" || (d.flat && field == "select") {
					where = "the configuration"
					if d.flat {
						where = "a flow"
					}
				}
				keys := keysOf(v.Type())
				if d.flat {
					keys = flatFlowKeys()
				}
				return d.fail(k, "", "unknown key %q in %s: want one of %s", k.Value, where, strings.Join(keys, ", "))
			}
			if err := d.value(val, fv, sub); err != nil {
				return err
			}
		}
		return nil
	case v.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.fail(n, field, "is %s: want a list", kindName(n))
		}
		out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, el := range n.Content {
			if err := d.value(el, out.Index(i), fmt.Sprintf("%s[%d]", field, i)); err != nil {
				return err
			}
		}
		v.Set(out)
		return nil
	case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
		// A mapping of names to values (topology.netdevs, trace.routers):
		// each key once, each value of the map's type.
		if n.Kind != yaml.MappingNode {
			return d.fail(n, field, "is %s: want a mapping of names to %s", kindName(n), want(v.Type().Elem()))
		}
		out := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return d.fail(k, field, "has a key that is %s: want a name", kindName(k))
			}
			key := reflect.ValueOf(k.Value).Convert(v.Type().Key())
			if out.MapIndex(key).IsValid() {
				return d.fail(k, field+"."+k.Value, "given twice: want each key once")
			}
			e := reflect.New(v.Type().Elem()).Elem()
			if err := d.value(val, e, field+"."+k.Value); err != nil {
				return err
			}
			out.SetMapIndex(key, e)
		}
		v.Set(out)
		return nil
	case v.Kind() == reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.value(n, p.Elem(), field); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return d.fail(n, field, "is %s: want %s", kindName(n), want(v.Type()))
	}
	s := n.Value
	switch {
	case v.Type() == durationType:
		dur, err := time.ParseDuration(s)
		if err != nil {
			return d.fail(n, field, "%q is not a duration: want a number with a unit, e.g. 15s, 500ms, 2m", s)
		}
		v.SetInt(int64(dur))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Int:
		i, err := strconv.Atoi(s)
		if err != nil {
			return d.fail(n, field, "%q is not a whole number: want a decimal integer", s)
		}
		v.SetInt(int64(i))
	case v.Kind() == reflect.Bool:
		switch s {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			return d.fail(n, field, "%q is not a boolean: want true or false", s)
		}
	case v.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return d.fail(n, field, "%q is not a number: want a decimal number", s)
		}
		v.SetFloat(f)
	default:
		return d.fail(n, field, "cannot be set") // no such field type in Config
	}
	return nil
}

func want(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration such as 15s"
	case t.Kind() == reflect.String:
		return "text"
	case t.Kind() == reflect.Int:
		return "a whole number"
	case t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	}
	return "a value"
}

func fieldByTag(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func keysOf(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag != "" {
			out = append(out, tag)
		}
	}
	return out
}

func flatFlowKeys() []string {
	var out []string
	for _, k := range keysOf(reflect.TypeOf(FlowConfig{})) {
		if k != "select" {
			out = append(out, k)
		}
	}
	return append(out, keysOf(reflect.TypeOf(SelectConfig{}))...)
}

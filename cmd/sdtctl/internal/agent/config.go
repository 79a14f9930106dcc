package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gosdt/gosdt/internal/spec"
)

// ConfigKey is the key of the agent's file in the server's config map.
const ConfigKey = "gosdt.yaml"

// Limits of a configuration: what the server may ask of one host at most.
const (
	MaxEntries       = 32
	MaxSpecs         = 16 // per entry
	MinTTL           = time.Second
	MaxTTL           = 24 * time.Hour
	DefaultTTL       = 10 * time.Minute
	DefaultServerTTL = time.Minute // server_timeout: how long a set outlives the server's absence
	MaxFires         = 1e9         // fires/s a budget may allow
)

// Config is a parsed gosdt.yaml: the probe sets the server wants, in its order.
type Config struct {
	Probes []Entry `yaml:"probes" json:"probes"`
}

// Entry is one probe set: which processes, which probes, what is made of their fires,
// for how long, at what cost at most.
type Entry struct {
	Service       string        `yaml:"service,omitempty" json:"service,omitempty"` // glob on the service name
	Name          string        `yaml:"name,omitempty" json:"name,omitempty"`       // glob on the command name
	Specs         []string      `yaml:"specs" json:"specs"`
	Export        string        `yaml:"export,omitempty" json:"export"` // spans, metrics or both
	By            string        `yaml:"by,omitempty" json:"by,omitempty"`
	TTL           Duration      `yaml:"ttl,omitempty" json:"ttl"`
	ServerTimeout Duration      `yaml:"server_timeout,omitempty" json:"server_timeout"`
	Budget        Budget        `yaml:"budget,omitempty" json:"budget,omitempty"`
	key           string        // what makes two entries the same set
	ttl, lost     time.Duration // TTL and ServerTimeout, defaults applied
}

// Budget is what a set may cost a process: a share of one CPU above the process's own
// before the set (CPU, percent), or fires per second (Fires); zero is no budget.
type Budget struct {
	CPU   Percent `yaml:"cpu,omitempty" json:"cpu,omitempty"`
	Fires Rate    `yaml:"fires,omitempty" json:"fires,omitempty"`
}

// Spans and Metrics say what the entry exports.
func (e *Entry) Spans() bool   { return e.Export == "spans" || e.Export == "both" }
func (e *Entry) Metrics() bool { return e.Export == "metrics" || e.Export == "both" }

// Key identifies the set: two configurations that keep an entry unchanged keep it
// running, with the time to live it had.
func (e *Entry) Key() string { return e.key }

// TTLDuration and Lost are the entry's time to live and how long it outlives the
// server's absence.
func (e *Entry) TTLDuration() time.Duration { return e.ttl }
func (e *Entry) Lost() time.Duration        { return e.lost }

// Matches reports whether a process of that service and command is the entry's.
func (e *Entry) Matches(service, command string) bool {
	if e.Service != "" {
		if ok, _ := path.Match(e.Service, service); !ok {
			return false
		}
	}
	if e.Name != "" {
		if ok, _ := path.Match(e.Name, command); !ok {
			return false
		}
	}
	return true
}

// Duration is a Go duration ("10m", "90s") in YAML.
type Duration time.Duration

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (such as 90s, 10m, 1h)", n.Line, s)
	}
	if v < MinTTL || v > MaxTTL {
		// Zero is refused here: in the struct it means "not given", the default.
		return fmt.Errorf("line %d: %v: out of range (%v to %v)", n.Line, v, MinTTL, MaxTTL)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads what MarshalText wrote (the state a client decodes).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Percent is "2%" in YAML: a share of one CPU, in percent.
type Percent float64

func (p *Percent) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil {
		return fmt.Errorf("line %d: cpu budget %q: want a percentage of one CPU, such as 2%%", n.Line, s)
	}
	if !(v > 0 && v <= 100) {
		return fmt.Errorf("line %d: cpu budget %q: out of range (above 0%%, at most 100%%)", n.Line, s)
	}
	*p = Percent(v)
	return nil
}

func (p Percent) MarshalText() ([]byte, error) {
	return []byte(strconv.FormatFloat(float64(p), 'g', -1, 64) + "%"), nil
}

func (p *Percent) UnmarshalText(b []byte) error {
	v, err := strconv.ParseFloat(strings.TrimSuffix(string(b), "%"), 64)
	*p = Percent(v)
	return err
}

// Rate is "50000/s" in YAML: fires per second.
type Rate float64

func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "/s")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil {
		return fmt.Errorf("line %d: fires budget %q: want fires per second, such as 50000/s", n.Line, s)
	}
	if !(v >= 1 && v <= MaxFires) {
		return fmt.Errorf("line %d: fires budget %q: out of range (1/s to %g/s)", n.Line, s, float64(MaxFires))
	}
	*r = Rate(v)
	return nil
}

func (r Rate) MarshalText() ([]byte, error) {
	return []byte(strconv.FormatFloat(float64(r), 'f', -1, 64) + "/s"), nil
}

func (r *Rate) UnmarshalText(b []byte) error {
	v, err := strconv.ParseFloat(strings.TrimSuffix(string(b), "/s"), 64)
	*r = Rate(v)
	return err
}

// Parse reads gosdt.yaml: fields it does not know, values out of range and specs that
// do not parse are refused with what and where, and nothing of a refused body is kept.
// An empty body is a configuration without probe sets.
func Parse(body []byte) (*Config, error) {
	c := &Config{}
	if len(bytes.TrimSpace(body)) == 0 {
		return c, nil
	}
	d := yaml.NewDecoder(bytes.NewReader(body))
	d.KnownFields(true)
	if err := d.Decode(c); err != nil {
		if errors.Is(err, io.EOF) {
			return &Config{}, nil // only comments
		}
		return nil, fmt.Errorf("%s: %w", ConfigKey, err)
	}
	var more yaml.Node
	if err := d.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: one YAML document, not several", ConfigKey)
	}
	if len(c.Probes) > MaxEntries {
		return nil, fmt.Errorf("%s: %d probe sets: at most %d", ConfigKey, len(c.Probes), MaxEntries)
	}
	for i := range c.Probes {
		if err := c.Probes[i].check(); err != nil {
			return nil, fmt.Errorf("%s: probes[%d]: %w", ConfigKey, i, err)
		}
	}
	return c, nil
}

func (e *Entry) check() error {
	if e.Service == "" && e.Name == "" {
		return errors.New("names no process: give service (a glob on the service name) or name (a glob on the command)")
	}
	for _, g := range []string{e.Service, e.Name} {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("%q: %v", g, err)
		}
	}
	if len(e.Specs) == 0 {
		return errors.New("no specs")
	}
	if len(e.Specs) > MaxSpecs {
		return fmt.Errorf("%d specs: at most %d", len(e.Specs), MaxSpecs)
	}
	for _, s := range e.Specs {
		if _, err := spec.Parse(s); err != nil {
			return err
		}
	}
	switch e.Export {
	case "":
		e.Export = "both"
	case "spans", "metrics", "both":
	default:
		return fmt.Errorf("export %q: want spans, metrics or both", e.Export)
	}
	if e.By == "" {
		e.By = "probe"
	} else if strings.ContainsAny(e.By, " \t:/") {
		return fmt.Errorf("by %q: want probe, site, or an argument's name (argN)", e.By)
	}
	e.ttl, e.lost = time.Duration(e.TTL), time.Duration(e.ServerTimeout)
	if e.TTL == 0 {
		e.ttl = DefaultTTL
	}
	if e.ServerTimeout == 0 {
		e.lost = DefaultServerTTL
	}
	for _, d := range []struct {
		what string
		v    time.Duration
	}{{"ttl", e.ttl}, {"server_timeout", e.lost}} {
		if d.v < MinTTL || d.v > MaxTTL {
			return fmt.Errorf("%s %v: out of range (%v to %v)", d.what, d.v, MinTTL, MaxTTL)
		}
	}
	if e.Budget.CPU != 0 && e.Budget.Fires != 0 {
		return errors.New("budget: cpu or fires, not both")
	}
	e.TTL, e.ServerTimeout = Duration(e.ttl), Duration(e.lost)
	e.key = fmt.Sprintf("%q %q %q %s %s %v %v %v %v", e.Service, e.Name, e.Specs, e.Export, e.By, e.ttl, e.lost, e.Budget.CPU, e.Budget.Fires)
	return nil
}

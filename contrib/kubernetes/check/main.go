// Command check decodes rtlab's Kubernetes manifests strictly against the
// Kubernetes API's own types and checks what they must hold; `go test ./...`
// runs the same checks. It also prints what a manifest runs, for rtlab's
// Rust tests to run it as the cluster would:
//
//	go run . check ..                       every manifest of the directory
//	go run . command ../job-qualify.yaml    the workload's command and env (JSON)
//	go run . nfd-rules ../nodefeaturerule.yaml   the NFD rules (JSON)
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Workload is what a Job's or a DaemonSet's one container runs.
type Workload struct {
	// The command and its arguments, in order.
	Argv []string `json:"argv"`
	// Each environment variable's value.
	Env map[string]string `json:"env"`
}

// workload is the one Job's or DaemonSet's container of objs.
func workload(objs []Object) (Workload, error) {
	var specs []corev1.PodSpec
	for _, j := range objectsOf[batchv1.Job](objs) {
		specs = append(specs, j.Spec.Template.Spec)
	}
	for _, d := range objectsOf[appsv1.DaemonSet](objs) {
		specs = append(specs, d.Spec.Template.Spec)
	}
	if len(specs) != 1 || len(specs[0].Containers) != 1 {
		return Workload{}, errors.New("one Job or DaemonSet with one container expected")
	}
	c := specs[0].Containers[0]
	w := Workload{Argv: argv(c), Env: map[string]string{}}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return Workload{}, fmt.Errorf("env %s: valueFrom is not printed", e.Name)
		}
		w.Env[e.Name] = e.Value
	}
	return w, nil
}

// RuleMatch is one match expression of a rule.
type RuleMatch struct {
	Feature string   `json:"feature"`
	Element string   `json:"element"`
	Op      string   `json:"op"`
	Value   []string `json:"value"`
}

// RuleOut is one NFD rule: what it does, and on what match (all of them).
type RuleOut struct {
	Name    string            `json:"name"`
	Labels  map[string]string `json:"labels"`
	Taints  []string          `json:"taints"`
	Matches []RuleMatch       `json:"matches"`
}

// nfdRules is the rules of the one NodeFeatureRule of objs.
func nfdRules(objs []Object) ([]RuleOut, error) {
	nfr, err := onlyOne[NodeFeatureRule](objs)
	if err != nil {
		return nil, err
	}
	out := []RuleOut{}
	for _, r := range nfr.Spec.Rules {
		if len(r.MatchAny) > 0 || r.LabelsTemplate != "" {
			return nil, fmt.Errorf("rule %q: matchAny and labelsTemplate are not printed", r.Name)
		}
		ro := RuleOut{Name: r.Name, Labels: r.Labels, Taints: []string{}, Matches: []RuleMatch{}}
		if ro.Labels == nil {
			ro.Labels = map[string]string{}
		}
		for _, t := range r.Taints {
			ro.Taints = append(ro.Taints, t.ToString())
		}
		for _, m := range r.MatchFeatures {
			if m.MatchName != nil {
				return nil, fmt.Errorf("rule %q: matchName is not printed", r.Name)
			}
			for el, e := range m.MatchExpressions {
				v := e.Value
				if v == nil {
					v = []string{}
				}
				ro.Matches = append(ro.Matches, RuleMatch{Feature: m.Feature, Element: el, Op: e.Op, Value: v})
			}
		}
		out = append(out, ro)
	}
	return out, nil
}

// checkAll decodes every manifest of dir and runs every check.
func checkAll(dir string) ([]Object, problems, error) {
	files, err := manifestFiles(dir)
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("%s: no *.yaml", dir)
	}
	var objs []Object
	for _, f := range files {
		o, err := readManifest(f)
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, o...)
	}
	var p problems
	for _, check := range []func([]Object) problems{checkMetadata, checkJob, checkMonitor, checkNodeFeatureRule, checkTolerations} {
		p = append(p, check(objs)...)
	}
	return objs, p, nil
}

func run(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: check check DIR | command FILE | nfd-rules FILE")
	}
	var out any
	switch args[0] {
	case "check":
		objs, p, err := checkAll(args[1])
		if err != nil {
			return err
		}
		if len(p) > 0 {
			return errors.Join(p...)
		}
		fmt.Printf("%s: %d objects decoded strictly, every check holds\n", filepath.Clean(args[1]), len(objs))
		return nil
	case "command":
		objs, err := readManifest(args[1])
		if err != nil {
			return err
		}
		if out, err = workload(objs); err != nil {
			return err
		}
	case "nfd-rules":
		objs, err := readManifest(args[1])
		if err != nil {
			return err
		}
		if out, err = nfdRules(objs); err != nil {
			return err
		}
	default:
		return fmt.Errorf("no command %q", args[0])
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(1)
	}
}

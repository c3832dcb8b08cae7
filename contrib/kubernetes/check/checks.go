package main

// What the manifests must hold beyond decoding: each check returns every
// problem it finds (none: the manifests hold), so that the tests can also
// show a broken manifest caught.

import (
	"fmt"
	"math"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// valueKind is how cnf-tests parses a variable of its contract.
type valueKind int

const (
	// strconv.ParseBool.
	boolean valueKind = iota
	// strconv.Atoi, 1..MaxInt32.
	positive
	// strconv.Atoi, 0..MaxInt32.
	nonNegative
)

// contract is the environment of cnf-tests' latency tests
// (functests/4_latency), which rtlab qualify honours: every name the Job
// may set, and how each value is read.
var contract = map[string]valueKind{
	"LATENCY_TEST_RUN":            boolean,
	"LATENCY_TEST_RUNTIME":        positive,
	"LATENCY_TEST_DELAY":          nonNegative,
	"LATENCY_TEST_CPUS":           nonNegative,
	"MAXIMUM_LATENCY":             nonNegative,
	"HWLATDETECT_MAXIMUM_LATENCY": nonNegative,
	"CYCLICTEST_MAXIMUM_LATENCY":  nonNegative,
	"OSLAT_MAXIMUM_LATENCY":       nonNegative,
}

// requiredEnv is what the Job must set: the run itself, its length, its
// delay, its CPUs and a limit for every test.
var requiredEnv = []string{"LATENCY_TEST_RUN", "LATENCY_TEST_RUNTIME", "LATENCY_TEST_DELAY", "LATENCY_TEST_CPUS", "MAXIMUM_LATENCY"}

// The directory nfd-worker's local source reads.
const featuresDir = "/etc/kubernetes/node-feature-discovery/features.d"

// The CRI-O annotations of a low-latency pod.
var crioAnnotations = []string{"cpu-load-balancing.crio.io", "irq-load-balancing.crio.io", "cpu-quota.crio.io"}

// rtlab qualify's tests.
var qualifyTests = []string{"hwlatdetect", "cyclictest", "oslat"}

type problems []error

func (p *problems) add(format string, a ...any) {
	*p = append(*p, fmt.Errorf(format, a...))
}

// argv is a container's command and arguments.
func argv(c corev1.Container) []string {
	return append(slices.Clone(c.Command), c.Args...)
}

// theContainer is a pod's one container.
func theContainer(what string, spec corev1.PodSpec, p *problems) (corev1.Container, bool) {
	if len(spec.Containers) != 1 {
		p.add("%s: %d containers, one expected", what, len(spec.Containers))
		return corev1.Container{}, false
	}
	return spec.Containers[0], true
}

// nfdFile is the --nfd-file of a qualify command line, checked.
func nfdFile(words []string, p *problems) string {
	if len(words) < 2 || words[0] != "/rtlab" || words[1] != "qualify" {
		p.add("Job: the command is %q, not /rtlab qualify", words)
		return ""
	}
	file := ""
	for i := 2; i < len(words); i++ {
		switch w := words[i]; {
		case w == "--nfd-file" && i+1 < len(words) && file == "":
			file = words[i+1]
			i++
		case slices.Contains(qualifyTests, w):
		default:
			p.add("Job: qualify's argument %q is neither a test (%v) nor one --nfd-file PATH", w, qualifyTests)
		}
	}
	switch {
	case file == "":
		p.add("Job: no --nfd-file: the verdict would reach no node label")
	case path.Dir(file) != featuresDir:
		p.add("Job: --nfd-file %s is not in %s, where nfd-worker reads", file, featuresDir)
	case strings.HasPrefix(path.Base(file), "."):
		p.add("Job: --nfd-file %s is a dotfile: NFD ignores dotfiles", file)
	}
	return file
}

// checkEnv checks the env against the contract; the values by name.
func checkEnv(env []corev1.EnvVar, p *problems) map[string]string {
	values := map[string]string{}
	for _, e := range env {
		kind, ok := contract[e.Name]
		if !ok {
			p.add("Job: env %s is not a name of cnf-tests' contract", e.Name)
			continue
		}
		if e.ValueFrom != nil {
			p.add("Job: env %s: a value, not valueFrom, expected", e.Name)
			continue
		}
		if _, dup := values[e.Name]; dup {
			p.add("Job: env %s set twice", e.Name)
		}
		values[e.Name] = e.Value
		switch kind {
		case boolean:
			if _, err := strconv.ParseBool(e.Value); err != nil {
				p.add("Job: env %s=%q: %v", e.Name, e.Value, err)
			}
		case positive, nonNegative:
			n, err := strconv.Atoi(e.Value)
			low := map[valueKind]int{positive: 1, nonNegative: 0}[kind]
			if err != nil || n < low || n > math.MaxInt32 {
				p.add("Job: env %s=%q: an integer from %d to %d expected", e.Name, e.Value, low, math.MaxInt32)
			}
		}
	}
	for _, name := range requiredEnv {
		if _, ok := values[name]; !ok {
			p.add("Job: env %s not set", name)
		}
	}
	if run, err := strconv.ParseBool(values["LATENCY_TEST_RUN"]); err == nil && !run {
		p.add("Job: LATENCY_TEST_RUN=%q: the tests would be skipped", values["LATENCY_TEST_RUN"])
	}
	return values
}

// guaranteed checks that every container requests what it is limited to,
// CPU and memory, in whole CPUs: the Guaranteed class, which the static CPU
// manager policy gives CPUs of its own.
func guaranteed(what string, spec corev1.PodSpec, p *problems) {
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		req, lim := c.Resources.Requests, c.Resources.Limits
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := lim[r]; !ok {
				p.add("%s: container %s has no %s limit", what, c.Name, r)
			}
		}
		if len(req) != len(lim) {
			p.add("%s: container %s requests %d resources, limits %d", what, c.Name, len(req), len(lim))
		}
		for r, l := range lim {
			q, ok := req[r]
			if !ok || q.Cmp(l) != 0 {
				p.add("%s: container %s requests %s %s, limited to %s", what, c.Name, r, q.String(), l.String())
			}
		}
		if cpu, ok := lim[corev1.ResourceCPU]; ok && cpu.MilliValue()%1000 != 0 {
			p.add("%s: container %s: %s CPUs, whole CPUs expected", what, c.Name, cpu.String())
		}
	}
}

// addsCapabilities checks that a container is given caps.
func addsCapabilities(what string, c corev1.Container, caps []corev1.Capability, p *problems) {
	var added []corev1.Capability
	if sc := c.SecurityContext; sc != nil && sc.Capabilities != nil {
		added = sc.Capabilities.Add
	}
	for _, cp := range caps {
		if !slices.Contains(added, cp) {
			p.add("%s: container %s does not add capability %s", what, c.Name, cp)
		}
	}
}

// hostPathMount checks that a container mounts host directory dir at the
// same place, from a hostPath volume of type typ.
func hostPathMount(what string, spec corev1.PodSpec, c corev1.Container, dir string, typ corev1.HostPathType, p *problems) {
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir })
	if i < 0 {
		p.add("%s: nothing mounted at %s", what, dir)
		return
	}
	m := c.VolumeMounts[i]
	if m.ReadOnly || m.SubPath != "" {
		p.add("%s: %s mounted read-only or a subPath", what, dir)
	}
	j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
	if j < 0 {
		p.add("%s: no volume %s", what, m.Name)
		return
	}
	hp := spec.Volumes[j].HostPath
	if hp == nil || hp.Path != dir || hp.Type == nil || *hp.Type != typ {
		p.add("%s: volume %s is not the host's %s (hostPath, type %s)", what, m.Name, dir, typ)
	}
}

// checkJob checks the qualification Job.
func checkJob(objs []Object) problems {
	var p problems
	job, err := onlyOne[batchv1.Job](objs)
	if err != nil {
		p.add("Job: %v", err)
		return p
	}
	spec := job.Spec.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		p.add("Job: restartPolicy %q, Never expected", spec.RestartPolicy)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 {
		p.add("Job: backoffLimit not 0: a failed qualification would be run again")
	}
	for _, a := range crioAnnotations {
		if v := job.Spec.Template.Annotations[a]; v != "disable" {
			p.add("Job: pod annotation %s is %q, \"disable\" expected", a, v)
		}
	}
	if spec.RuntimeClassName == nil || *spec.RuntimeClassName == "" {
		p.add("Job: no runtimeClassName: CRI-O acts on the annotations only under the performance runtime class")
	}
	guaranteed("Job", spec, &p)
	c, ok := theContainer("Job", spec, &p)
	if !ok {
		return p
	}
	nfdFile(argv(c), &p)
	values := checkEnv(c.Env, &p)
	if cpu, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		if n, err := strconv.Atoi(values["LATENCY_TEST_CPUS"]); err == nil && int64(n)*1000 != cpu.MilliValue() {
			p.add("Job: LATENCY_TEST_CPUS=%d, but the pod is given %s CPUs", n, cpu.String())
		}
	}
	addsCapabilities("Job", c, []corev1.Capability{"SYS_NICE", "IPC_LOCK"}, &p)
	hostPathMount("Job", spec, c, featuresDir, corev1.HostPathDirectoryOrCreate, &p)
	hostPathMount("Job", spec, c, "/sys/kernel/tracing", corev1.HostPathDirectory, &p)
	return p
}

// selects reports whether a label selector selects a set of labels.
func selects(sel *metav1.LabelSelector, set map[string]string) (bool, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	if s.Empty() {
		return false, fmt.Errorf("an empty selector (it would select everything)")
	}
	return s.Matches(labels.Set(set)), nil
}

// checkMonitor checks the monitor's DaemonSet, its Service and the
// ServiceMonitor that scrapes it.
func checkMonitor(objs []Object) problems {
	var p problems
	ds, err := onlyOne[appsv1.DaemonSet](objs)
	if err != nil {
		p.add("DaemonSet: %v", err)
		return p
	}
	pod := ds.Spec.Template
	if ok, err := selects(ds.Spec.Selector, pod.Labels); err != nil || !ok {
		p.add("DaemonSet: its selector does not select its pods' labels (%v)", err)
	}
	c, ok := theContainer("DaemonSet", pod.Spec, &p)
	if !ok {
		return p
	}
	words := argv(c)
	listen := ""
	if len(words) < 2 || words[0] != "/rtlab" || words[1] != "monitor" {
		p.add("DaemonSet: the command is %q, not /rtlab monitor", words)
	}
	for i, w := range words {
		if i+1 < len(words) && w == "--listen" {
			listen = words[i+1]
		}
		if i+1 < len(words) && w == "--windows" && words[i+1] != "none" {
			p.add("DaemonSet: --windows %s: the pod's files do not outlive it (none expected)", words[i+1])
		}
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil || host != "0.0.0.0" {
		p.add("DaemonSet: --listen %q: 0.0.0.0:PORT expected (the default is loopback only)", listen)
	}
	i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == "metrics" })
	var metricsPort corev1.ContainerPort
	if i < 0 {
		p.add("DaemonSet: no container port named metrics")
	} else {
		metricsPort = c.Ports[i]
		if strconv.Itoa(int(metricsPort.ContainerPort)) != port {
			p.add("DaemonSet: container port metrics is %d, rtlab listens on %s", metricsPort.ContainerPort, port)
		}
	}
	addsCapabilities("DaemonSet", c, []corev1.Capability{"SYS_NICE"}, &p)

	svc, err := onlyOne[corev1.Service](objs)
	if err != nil {
		p.add("Service: %v", err)
		return p
	}
	if svc.Namespace != ds.Namespace {
		p.add("Service: namespace %q, the DaemonSet's is %q", svc.Namespace, ds.Namespace)
	}
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
		p.add("Service: its selector %v does not select the monitor's pods %v", svc.Spec.Selector, pod.Labels)
	}
	j := slices.IndexFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == "metrics" })
	if j < 0 {
		p.add("Service: no port named metrics")
	} else if tp := svc.Spec.Ports[j].TargetPort; !(tp.StrVal == "metrics" || (tp.StrVal == "" && tp.IntVal == metricsPort.ContainerPort)) {
		p.add("Service: port metrics goes to %s, not to the container's port metrics", tp.String())
	}

	sm, err := onlyOne[monitoringv1.ServiceMonitor](objs)
	if err != nil {
		p.add("ServiceMonitor: %v", err)
		return p
	}
	if ok, err := selects(&sm.Spec.Selector, svc.Labels); err != nil || !ok {
		p.add("ServiceMonitor: its selector does not select the Service's labels %v (%v)", svc.Labels, err)
	}
	ns := sm.Spec.NamespaceSelector
	inNamespace := ns.Any || slices.Contains(ns.MatchNames, svc.Namespace) ||
		(len(ns.MatchNames) == 0 && sm.Namespace == svc.Namespace)
	if !inNamespace {
		p.add("ServiceMonitor: its namespaceSelector leaves out the Service's namespace %q", svc.Namespace)
	}
	if len(sm.Spec.Endpoints) == 0 {
		p.add("ServiceMonitor: no endpoint")
	}
	for _, e := range sm.Spec.Endpoints {
		if e.Port != "metrics" {
			p.add("ServiceMonitor: endpoint port %q, the Service's port is named metrics", e.Port)
		}
		if e.Path != "/metrics" {
			p.add("ServiceMonitor: endpoint path %q, rtlab serves /metrics", e.Path)
		}
	}
	return p
}

// localFeatures is NFD's features of its local source (feature files).
var localFeatures = []string{"local.label", "local.feature"}

// checkNodeFeatureRule checks the NFD rules on rtlab's feature file.
func checkNodeFeatureRule(objs []Object) problems {
	var p problems
	nfr, err := onlyOne[NodeFeatureRule](objs)
	if err != nil {
		p.add("NodeFeatureRule: %v", err)
		return p
	}
	labelled := map[string]string{}
	for _, r := range nfr.Spec.Rules {
		what := fmt.Sprintf("NodeFeatureRule %q", r.Name)
		if r.Name == "" {
			p.add("NodeFeatureRule: a rule without a name")
		}
		for k, v := range r.Labels {
			for _, e := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
				p.add("%s: label %s=%s: %s", what, k, v, e)
			}
		}
		for _, t := range r.Taints {
			prefix, _, hasPrefix := strings.Cut(t.Key, "/")
			if !hasPrefix || (strings.HasSuffix(prefix, "kubernetes.io") && !strings.HasSuffix(prefix, "feature.node.kubernetes.io")) {
				p.add("%s: taint key %q: NFD wants a prefix, outside kubernetes.io", what, t.Key)
			}
			if !slices.Contains([]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}, t.Effect) {
				p.add("%s: taint effect %q", what, t.Effect)
			}
		}
		if len(r.MatchAny) > 0 {
			p.add("%s: matchAny is not checked here", what)
		}
		for _, m := range r.MatchFeatures {
			for name, e := range m.MatchExpressions {
				n, known := matchOps[e.Op]
				switch {
				case !known:
					p.add("%s: %s %s: no operator %q", what, m.Feature, name, e.Op)
				case n >= 0 && len(e.Value) != n, n < 0 && len(e.Value) == 0:
					p.add("%s: %s %s: %s with %d values", what, m.Feature, name, e.Op, len(e.Value))
				}
				if slices.Contains(localFeatures, m.Feature) && name == "rtlab.qualified" {
					labelled[e.Op] = r.Labels["rtlab.io/qualified"]
				} else if slices.Contains(localFeatures, m.Feature) && !strings.HasPrefix(name, "rtlab.") {
					p.add("%s: %s %s is not a feature rtlab writes", what, m.Feature, name)
				}
			}
		}
	}
	if labelled["IsTrue"] != "true" || labelled["IsFalse"] != "false" {
		p.add("NodeFeatureRule: rtlab.qualified true and false should give rtlab.io/qualified true and false; they give %q and %q",
			labelled["IsTrue"], labelled["IsFalse"])
	}
	return p
}

// tolerates is the scheduler's rule for a toleration and a taint (the
// effect, then the key and value by the operator).
func tolerates(tol corev1.Toleration, t corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return tol.Key == "" || tol.Key == t.Key
	case corev1.TolerationOpEqual, "":
		return tol.Key == t.Key && tol.Value == t.Value
	}
	return false
}

// checkTolerations checks that the Job and the monitor tolerate the taints
// the NFD rules may put on a node that did not qualify.
func checkTolerations(objs []Object) problems {
	var p problems
	var taints []corev1.Taint
	for _, nfr := range objectsOf[NodeFeatureRule](objs) {
		for _, r := range nfr.Spec.Rules {
			taints = append(taints, r.Taints...)
		}
	}
	pods := map[string]corev1.PodSpec{}
	for _, j := range objectsOf[batchv1.Job](objs) {
		pods["Job "+j.Name] = j.Spec.Template.Spec
	}
	for _, d := range objectsOf[appsv1.DaemonSet](objs) {
		pods["DaemonSet "+d.Name] = d.Spec.Template.Spec
	}
	for what, spec := range pods {
		for _, t := range taints {
			if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tolerates(tol, t) }) {
				p.add("%s does not tolerate the taint %s", what, t.ToString())
			}
		}
	}
	return p
}

// checkMetadata checks names, labels and annotations as the API server
// validates them, and that every namespaced object's namespace is made by
// a Namespace of the manifests.
func checkMetadata(objs []Object) problems {
	var p problems
	namespaces := map[string]bool{}
	for _, ns := range objectsOf[corev1.Namespace](objs) {
		namespaces[ns.Name] = true
	}
	for _, o := range objs {
		m, ok := o.Value.(metav1.ObjectMetaAccessor)
		if !ok {
			p.add("%s: no metadata", o.Where)
			continue
		}
		meta := m.GetObjectMeta()
		for _, e := range validation.IsDNS1123Subdomain(meta.GetName()) {
			p.add("%s: name %q: %s", o.Where, meta.GetName(), e)
		}
		_, isNamespace := o.Value.(*corev1.Namespace)
		_, isRule := o.Value.(*NodeFeatureRule)
		switch {
		case isNamespace || isRule:
			if meta.GetNamespace() != "" {
				p.add("%s: a cluster-scoped object with a namespace", o.Where)
			}
		case !namespaces[meta.GetNamespace()]:
			p.add("%s: namespace %q is not made by these manifests", o.Where, meta.GetNamespace())
		}
		check := func(set map[string]string, what string) {
			for k, v := range set {
				for _, e := range validation.IsQualifiedName(k) {
					p.add("%s: %s key %q: %s", o.Where, what, k, e)
				}
				if what == "label" {
					for _, e := range validation.IsValidLabelValue(v) {
						p.add("%s: label %s=%q: %s", o.Where, k, v, e)
					}
				}
			}
		}
		check(meta.GetLabels(), "label")
		check(meta.GetAnnotations(), "annotation")
	}
	return p
}

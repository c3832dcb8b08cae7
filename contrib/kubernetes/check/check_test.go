package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The manifests: the directory above this module.
const dir = ".."

// load decodes every manifest of dir, with file `name` (if any) replaced
// by `text`.
func load(t *testing.T, name string, text []byte) []Object {
	t.Helper()
	files, err := manifestFiles(dir)
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifest in %s: %v", dir, err)
	}
	var objs []Object
	for _, f := range files {
		var o []Object
		if filepath.Base(f) == name {
			o, err = decodeManifest(name, text)
		} else {
			o, err = readManifest(f)
		}
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o...)
	}
	return objs
}

func report(t *testing.T, p problems) {
	t.Helper()
	for _, e := range p {
		t.Error(e)
	}
}

// mutated is file `name` with `old` (which must be there) replaced by
// `new` once.
func mutated(t *testing.T, name, old, new string) []byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), old) {
		t.Fatalf("%s: %q not found: the test no longer mutates the manifest", name, old)
	}
	return []byte(strings.Replace(string(text), old, new, 1))
}

func TestEveryManifestDecodesStrictlyIntoTheAPITypes(t *testing.T) {
	files, err := manifestFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	want := "daemonset-monitor.yaml job-qualify.yaml nodefeaturerule.yaml servicemonitor.yaml"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("manifests %q, want %q", got, want)
	}
	found := map[schema.GroupVersionKind]int{}
	for _, o := range load(t, "", nil) {
		found[o.GVK]++
		t.Logf("%s: %s", o.Where, o.GVK)
	}
	for gvk := range kinds {
		if found[gvk] == 0 {
			t.Errorf("no %s in the manifests", gvk)
		}
	}
}

func TestTheJobRunsQualifyUnderCnfTestsContract(t *testing.T) {
	report(t, checkJob(load(t, "", nil)))
}

func TestPrometheusScrapesTheMonitorThroughItsService(t *testing.T) {
	report(t, checkMonitor(load(t, "", nil)))
}

func TestTheNodeFeatureRuleLabelsByRtlabsVerdict(t *testing.T) {
	report(t, checkNodeFeatureRule(load(t, "", nil)))
}

func TestTheTaintIsToleratedAndTheMetadataValid(t *testing.T) {
	objs := load(t, "", nil)
	report(t, checkTolerations(objs))
	report(t, checkMetadata(objs))
}

func TestTheCommandLineToolAgrees(t *testing.T) {
	if _, p, err := checkAll(dir); err != nil || len(p) > 0 {
		t.Errorf("check %s: %v %v", dir, err, p)
	}
	objs := load(t, "", nil)
	w, err := workload(fromFile(objs, "job-qualify.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(w.Argv[:2], " ") != "/rtlab qualify" || w.Env["LATENCY_TEST_RUN"] != "true" {
		t.Errorf("command: %+v", w)
	}
	rules, err := nfdRules(objs)
	if err != nil || len(rules) != 2 {
		t.Errorf("nfd-rules: %+v, %v", rules, err)
	}
}

// fromFile is the objects decoded from one file.
func fromFile(objs []Object, file string) []Object {
	var out []Object
	for _, o := range objs {
		if strings.HasPrefix(o.Where, file+",") {
			out = append(out, o)
		}
	}
	return out
}

// The decoder the manifests pass refuses a field the API does not have:
// misspelt, in the wrong case, given twice, or a kind it has no type for.
func TestAMisspeltFieldIsRefused(t *testing.T) {
	for _, c := range []struct{ file, old, new, want string }{
		{"job-qualify.yaml", "restartPolicy: Never", "restartPolcy: Never", `unknown field "spec.template.spec.restartPolcy"`},
		{"job-qualify.yaml", "backoffLimit: 0", "backOffLimit: 0", `unknown field "spec.backOffLimit"`},
		{"job-qualify.yaml", "  backoffLimit: 0\n", "  backoffLimit: 0\n  backoffLimit: 1\n", `"backoffLimit" already set`},
		{"job-qualify.yaml", "kind: Job\n", "kind: Jobs\n", `no type for apiVersion "batch/v1", kind "Jobs"`},
		{"job-qualify.yaml", `cpu: "4"`, `cpu: "four"`, "quantities must match"},
		{"job-qualify.yaml", "hostPath:", "hostpath:", `unknown field "spec.template.spec.volumes[0].hostpath"`},
		{"daemonset-monitor.yaml", "containerPort: 9977", "containerport: 9977", `unknown field "spec.template.spec.containers[0].ports[0].containerport"`},
		{"daemonset-monitor.yaml", "clusterIP: None", "clusterIp: None", `unknown field "spec.clusterIp"`},
		{"servicemonitor.yaml", "  endpoints:", "  endpoint:", `unknown field "spec.endpoint"`},
		{"servicemonitor.yaml", "targetLabel: node", "target_label: node", `unknown field "spec.endpoints[0].relabelings[0].target_label"`},
		{"nodefeaturerule.yaml", "matchFeatures:", "matchFeature:", `unknown field "spec.rules[0].matchFeature"`},
		{"nodefeaturerule.yaml", "op: IsTrue", "operator: IsTrue", `unknown field "spec.rules[0].matchFeatures[0].matchExpressions.rtlab.qualified.operator"`},
	} {
		_, err := decodeManifest(c.file, mutated(t, c.file, c.old, c.new))
		t.Logf("%s, %q for %q: %v", c.file, c.new, c.old, err)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s with %q for %q: error %v, want one with %s", c.file, c.new, c.old, err, c.want)
		}
	}
}

// The checks catch a manifest that decodes but breaks what it must hold.
func TestABrokenInvariantIsCaught(t *testing.T) {
	for _, c := range []struct {
		file, old, new string
		check          func([]Object) problems
		want           string
	}{
		{"job-qualify.yaml", "name: LATENCY_TEST_RUNTIME", "name: LATENCY_TEST_RUNTIM", checkJob, "env LATENCY_TEST_RUNTIM is not a name of cnf-tests' contract"},
		{"job-qualify.yaml", `value: "300"`, `value: "300s"`, checkJob, `env LATENCY_TEST_RUNTIME="300s": an integer`},
		{"job-qualify.yaml", `value: "true"`, `value: "yes"`, checkJob, `LATENCY_TEST_RUN="yes"`},
		{"job-qualify.yaml", "- name: MAXIMUM_LATENCY", "- name: OSLAT_MAXIMUM_LATENCY", checkJob, "env MAXIMUM_LATENCY not set"},
		{"job-qualify.yaml", `value: "4"`, `value: "3"`, checkJob, "LATENCY_TEST_CPUS=3, but the pod is given 4 CPUs"},
		{"job-qualify.yaml", "                - IPC_LOCK\n", "", checkJob, "does not add capability IPC_LOCK"},
		{"job-qualify.yaml", `cpu: "4"`, `cpu: "3"`, checkJob, "requests cpu 3, limited to 4"},
		{"job-qualify.yaml", "cpu: \"4\"\n              memory: 512Mi\n          securityContext", "cpu: 3500m\n              memory: 512Mi\n          securityContext", checkJob, "3500m CPUs, whole CPUs expected"},
		{"job-qualify.yaml", `cpu-quota.crio.io: "disable"`, `cpu-quota.crio.io: "enable"`, checkJob, `cpu-quota.crio.io is "enable"`},
		{"job-qualify.yaml", "restartPolicy: Never", "restartPolicy: OnFailure", checkJob, `restartPolicy "OnFailure"`},
		{"job-qualify.yaml", "            - --nfd-file\n", "", checkJob, "neither a test"},
		{"job-qualify.yaml", "type: DirectoryOrCreate", "type: Directory", checkJob, "is not the host's /etc/kubernetes/node-feature-discovery/features.d"},
		{"job-qualify.yaml", "key: rtlab.io/not-qualified", "key: rtlab.io/unqualified", checkTolerations, "Job rtlab-qualify does not tolerate the taint rtlab.io/not-qualified=true:NoSchedule"},
		{"daemonset-monitor.yaml", "- 0.0.0.0:9977", "- 127.0.0.1:9977", checkMonitor, "0.0.0.0:PORT expected"},
		{"daemonset-monitor.yaml", "targetPort: metrics", "targetPort: 9978", checkMonitor, "port metrics goes to 9978"},
		{"daemonset-monitor.yaml", "  selector:\n    app.kubernetes.io/name: rtlab", "  selector:\n    app.kubernetes.io/name: rtlab2", checkMonitor, "does not select the monitor's pods"},
		{"servicemonitor.yaml", "- port: metrics", "- port: metric", checkMonitor, `endpoint port "metric"`},
		{"servicemonitor.yaml", "      - rtlab\n", "      - monitoring\n", checkMonitor, "leaves out the Service's namespace"},
		{"nodefeaturerule.yaml", "op: IsFalse", "op: IsTrue", checkNodeFeatureRule, `give "false" and ""`},
		{"nodefeaturerule.yaml", "rtlab.qualified:\n              op: IsTrue", "rtlab.qualified:\n              op: IsOn", checkNodeFeatureRule, `no operator "IsOn"`},
		{"nodefeaturerule.yaml", "rtlab.qualified:\n              op: IsTrue", "rtlab-qualified:\n              op: IsTrue", checkNodeFeatureRule, "rtlab-qualified is not a feature rtlab writes"},
		{"nodefeaturerule.yaml", "key: rtlab.io/not-qualified", "key: not-qualified", checkNodeFeatureRule, `taint key "not-qualified"`},
	} {
		p := c.check(load(t, c.file, mutated(t, c.file, c.old, c.new)))
		var all []string
		for _, e := range p {
			all = append(all, e.Error())
		}
		t.Logf("%s, %q for %q: %q", c.file, c.new, c.old, all)
		if !strings.Contains(strings.Join(all, "\n"), c.want) {
			t.Errorf("%s with %q for %q: problems %q, want one with %s", c.file, c.new, c.old, all, c.want)
		}
	}
}

package k8scheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/sched"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// fixture returns the experiment of sched's testdata/sweep.yaml as the command would describe
// it.
func fixture(t *testing.T, servers int) sched.Experiment {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "testdata", "sweep.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	return sched.Experiment{Path: "experiments/prefill-sweep.yaml", Name: "prefill-sweep", Source: src,
		SHA256: hex.EncodeToString(sum[:]), Servers: servers}
}

// kubernetesCases are the exports under test: those of sched's golden files, and more that
// leave settings at their defaults or take names to their limits.
func kubernetesCases(t *testing.T) map[string]sched.Kubernetes {
	e := fixture(t, 4)
	dotted := e
	dotted.Path = "dir/prefill_sweep.v2.yaml"
	return map[string]sched.Kubernetes{
		"t4": {
			Experiment: e, Shards: 4, Image: "ghcr.io/onelayerdown/runner-vllm:v0.11.0",
			NodeSelector: map[string]string{"nvidia.com/gpu.product": "Tesla-T4"},
			Command: []string{"runner", "export", "kubernetes", e.Path, "--shards", "4", "--image", "ghcr.io/onelayerdown/runner-vllm:v0.11.0",
				"--node-selector", "nvidia.com/gpu.product=Tesla-T4"},
		},
		"every flag": {
			Experiment: e, Shards: 12, Parallelism: 3, Image: "registry.example.com/bench/runner@sha256:0123abcd",
			GPUResource:  "amd.com/gpu",
			NodeSelector: map[string]string{"cloud.google.com/gke-accelerator": "nvidia-tesla-t4", "pool": "bench"},
			ResultsClaim: "bench-results", ResultsMount: "/data/runs", Name: "sweep-0412", Namespace: "perf",
		},
		"defaults, one shard": {Experiment: e, Shards: 1, Image: "runner:1"},
		"names at their limits": {
			Experiment: dotted, Shards: 100, Parallelism: 100, Image: "runner:1",
			GPUResource:  strings.Repeat("g", 253) + "/" + strings.Repeat("u", 63),
			NodeSelector: map[string]string{"k": "", "a.b_c-d": strings.Repeat("v", 63), "example.com/" + strings.Repeat("K", 63): "V"},
			ResultsClaim: strings.Repeat("c", 63) + "." + strings.Repeat("d", 63), ResultsMount: "/mnt/results/deep",
			Name: "n" + strings.Repeat("0", 56), Namespace: strings.Repeat("n", 63),
		},
	}
}

// withDefaults returns k with the settings it leaves empty set as the export documents them.
func withDefaults(k sched.Kubernetes) sched.Kubernetes {
	if k.Parallelism == 0 {
		k.Parallelism = k.Shards
	}
	if k.GPUResource == "" {
		k.GPUResource = sched.DefaultGPUResource
	}
	if k.ResultsClaim == "" {
		k.ResultsClaim = sched.DefaultResultsClaim
	}
	if k.ResultsMount == "" {
		k.ResultsMount = sched.DefaultResultsMount
	}
	if k.Name == "" {
		k.Name = sched.DefaultName(k.Experiment.Name)
	}
	return k
}

// decoded is a Kubernetes export read back strictly into the official API types.
type decoded struct {
	shards, merge *batchv1.Job
	configMap     *corev1.ConfigMap
}

// strict decodes one YAML document into obj as the API server does with strict field
// validation: case-sensitive field names, and unknown or duplicate fields are errors.
// (encoding/json alone would take backoffLimitPerindex for backoffLimitPerIndex.)
func strict(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	problems, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	return errors.Join(append(problems, err)...)
}

// documents splits a YAML stream into its documents, each without the comment lines it
// starts with and ending in its line break.
func documents(stream []byte) [][]byte {
	var docs [][]byte
	for doc := range bytes.SplitSeq(stream, []byte("\n---\n")) {
		if !bytes.HasSuffix(doc, []byte("\n")) {
			doc = append(slices.Clip(doc), '\n')
		}
		for bytes.HasPrefix(doc, []byte("#")) {
			_, doc, _ = bytes.Cut(doc, []byte("\n"))
		}
		docs = append(docs, doc)
	}
	return docs
}

// decodeStrict decodes the three documents of an export, the shard Job, the suspended merge Job
// and the ConfigMap, each strictly into the official type of its kind. It also checks that each
// document is exactly what the official type writes of what it decoded: no field of ours is
// written where the official type would leave it out, or the other way round.
func decodeStrict(t *testing.T, stream []byte) decoded {
	t.Helper()
	docs := documents(stream)
	if len(docs) != 3 {
		t.Fatalf("%d documents, want 3:\n%s", len(docs), stream)
	}
	var d decoded
	want := []string{"batch/v1 Job", "batch/v1 Job", "v1 ConfigMap"}
	for i, doc := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if got := tm.APIVersion + " " + tm.Kind; got != want[i] {
			t.Fatalf("document %d is a %q, want a %q", i, got, want[i])
		}
		var obj any
		switch i {
		case 0, 1:
			var j batchv1.Job
			if err := strict(doc, &j); err != nil {
				t.Fatalf("document %d: strict decode into batch/v1 Job: %v", i, err)
			}
			suspended := j.Spec.Suspend != nil && *j.Spec.Suspend
			if suspended != (i == 1) {
				t.Fatalf("document %d: suspend is %v: want the shard Job first, then the suspended merge Job", i, suspended)
			}
			if i == 0 {
				d.shards = &j
			} else {
				d.merge = &j
			}
			obj = &j
		case 2:
			var cm corev1.ConfigMap
			if err := strict(doc, &cm); err != nil {
				t.Fatalf("document %d: strict decode into v1 ConfigMap: %v", i, err)
			}
			d.configMap = &cm
			obj = &cm
		}
		again, err := officialYAML(obj)
		if err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if !bytes.Equal(doc, again) {
			t.Errorf("document %d differs from what the official type writes of it:\n--- written\n%s\n--- official\n%s", i, doc, again)
		}
	}
	return d
}

// officialYAML writes an object of the official types as YAML with its keys sorted, leaving
// out the empty objects (the status of a new object) that say nothing.
func officialYAML(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	dropEmpty(m)
	return yaml.Marshal(m)
}

// dropEmpty removes every key whose value is an empty object, depth first.
func dropEmpty(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			dropEmpty(v)
			if len(v) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range v {
				if em, ok := e.(map[string]any); ok {
					dropEmpty(em)
				}
			}
		}
	}
}

func TestKubernetesDecodesStrictly(t *testing.T) {
	for name, k := range kubernetesCases(t) {
		t.Run(name, func(t *testing.T) {
			if err := k.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
			var out bytes.Buffer
			if err := k.Write(&out); err != nil {
				t.Fatal(err)
			}
			d := decodeStrict(t, out.Bytes())
			k = withDefaults(k)
			for _, p := range validIndexedJob(d.shards, k.Shards) {
				t.Error("shard job: " + p)
			}
			for _, p := range validJob(d.merge) {
				t.Error("merge job: " + p)
			}
			for _, p := range validConfigMap(d.configMap) {
				t.Error("configmap: " + p)
			}
			checkWiring(t, k, d)
		})
	}
}

// TestGoldenFilesDecodeStrictly decodes sched's golden files, the bytes its own tests hold the
// export to, as TestKubernetesDecodesStrictly decodes a fresh export.
func TestGoldenFilesDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "kubernetes-*.golden"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files of the Kubernetes export: %v", err)
	}
	for _, f := range files {
		stream, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := decodeStrict(t, stream)
		for _, p := range append(validJob(d.shards), validJob(d.merge)...) {
			t.Errorf("%s: %s", f, p)
		}
	}
}

// TestStrictDecodeRefusesUnknownFields shows that the strict decode the tests rely on catches a
// misspelt field, a field given twice and a limit that is not a quantity, as the API server
// would, and that the comparison with the official type's writing catches a field the official
// type would leave out.
func TestStrictDecodeRefusesUnknownFields(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: batch/v1\nkind: Job\nspec:\n  completionMode: Indexed\n  backoffLimitPerindex: 1\n",
		"apiVersion: batch/v1\nkind: Job\nspec:\n  completionMode: Indexed\n  backofLimitPerIndex: 1\n",
		"apiVersion: batch/v1\nkind: Job\nspec:\n  completions: 1\n  completions: 2\n",
		"apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        resources:\n          limits:\n            nvidia.com/gpu: one\n",
	} {
		var j batchv1.Job
		if err := strict([]byte(doc), &j); err == nil {
			t.Errorf("strict decode accepted:\n%s", doc)
		}
	}
	for _, doc := range []string{
		// readOnly: false and an empty name are what the official types leave out.
		"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: \"\"\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n",
		"apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        volumeMounts:\n        - mountPath: /x\n          name: v\n          readOnly: false\n",
		// A quantity the official type writes in its canonical form.
		"apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        resources:\n          limits:\n            nvidia.com/gpu: 1000m\n",
	} {
		var j batchv1.Job
		if err := strict([]byte(doc), &j); err != nil {
			t.Fatal(err)
		}
		if again, err := officialYAML(&j); err != nil || string(again) == doc {
			t.Errorf("the official type writes back the same bytes (%v):\n%s", err, doc)
		}
	}
}

// validIndexedJob returns the problems the API server would find in the shard Job, of those
// that can be checked without one, and those that make it something other than n shards.
func validIndexedJob(j *batchv1.Job, n int) []string {
	p := validJob(j)
	s := j.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		p = append(p, "completionMode is not Indexed")
	}
	if s.Completions == nil || int(*s.Completions) != n {
		p = append(p, fmt.Sprintf("completions = %v, want %d", s.Completions, n))
	}
	if s.BackoffLimitPerIndex == nil {
		p = append(p, "no backoffLimitPerIndex")
	} else if *s.BackoffLimitPerIndex < 0 {
		p = append(p, "backoffLimitPerIndex is negative")
	}
	if s.MaxFailedIndexes != nil && (s.BackoffLimitPerIndex == nil || *s.MaxFailedIndexes > *s.Completions) {
		p = append(p, "maxFailedIndexes without backoffLimitPerIndex or above completions")
	}
	if s.Suspend != nil && *s.Suspend {
		p = append(p, "the shard Job is suspended")
	}
	// An Indexed Job's pod has the hostname NAME-INDEX, a DNS label.
	for _, e := range validation.IsDNS1123Label(j.Name + "-" + strconv.Itoa(n-1)) {
		p = append(p, "pod hostname: "+e)
	}
	pod := s.Template.Spec
	if len(pod.Containers) != 1 {
		return append(p, fmt.Sprintf("%d containers, want 1", len(pod.Containers)))
	}
	lim := pod.Containers[0].Resources.Limits
	gpus := 0
	for name, q := range lim {
		if strings.Contains(string(name), "/") && !strings.HasPrefix(string(name), "kubernetes.io/") {
			if v, ok := q.AsInt64(); !ok || v != 1 {
				p = append(p, fmt.Sprintf("limit %s = %s, want 1 GPU", name, q.String()))
			}
			gpus++
		}
	}
	if gpus != 1 {
		p = append(p, fmt.Sprintf("%d extended resources in the limits, want one GPU", gpus))
	}
	env := map[string]string{}
	for _, e := range pod.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env[sched.ShardsEnv] != strconv.Itoa(n) {
		p = append(p, fmt.Sprintf("%s = %q, want %d", sched.ShardsEnv, env[sched.ShardsEnv], n))
	}
	return p
}

// validJob returns the problems the API server's validation of a Job and its pod template would
// find, of those that can be checked offline.
func validJob(j *batchv1.Job) []string {
	var p []string
	add := func(what string, errs []string) {
		for _, e := range errs {
			p = append(p, what+": "+e)
		}
	}
	add("name "+j.Name, validation.IsDNS1123Label(j.Name)) // it is also the job-name label's value
	if j.Namespace != "" {
		add("namespace", validation.IsDNS1123Label(j.Namespace))
	}
	p = append(p, validLabels(j.Labels)...)
	p = append(p, validLabels(j.Spec.Template.Labels)...)
	s := j.Spec
	if s.Completions != nil && *s.Completions < 0 {
		p = append(p, "negative completions")
	}
	if s.Parallelism != nil && (*s.Parallelism < 0 || (s.Completions != nil && *s.Parallelism > *s.Completions)) {
		p = append(p, fmt.Sprintf("parallelism %d above completions", *s.Parallelism))
	}
	indexed := s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion
	if s.BackoffLimitPerIndex != nil && !indexed {
		p = append(p, "backoffLimitPerIndex needs completionMode Indexed")
	}
	if indexed && s.Completions == nil {
		p = append(p, "an Indexed Job needs completions")
	}
	pod := s.Template.Spec
	switch pod.RestartPolicy {
	case corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure:
	default:
		p = append(p, fmt.Sprintf("restartPolicy %q: a Job's pods restart Never or OnFailure", pod.RestartPolicy))
	}
	if fp := s.PodFailurePolicy; fp != nil {
		if pod.RestartPolicy != corev1.RestartPolicyNever {
			p = append(p, "podFailurePolicy needs restartPolicy Never")
		}
		for i, r := range fp.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailIndex && s.BackoffLimitPerIndex == nil {
				p = append(p, fmt.Sprintf("rule %d: FailIndex needs backoffLimitPerIndex", i))
			}
			if (r.OnExitCodes == nil) == (len(r.OnPodConditions) == 0) {
				p = append(p, fmt.Sprintf("rule %d: want exactly one of onExitCodes and onPodConditions", i))
			}
			if c := r.OnExitCodes; c != nil {
				if c.ContainerName != nil && !slices.ContainsFunc(pod.Containers, func(k corev1.Container) bool { return k.Name == *c.ContainerName }) {
					p = append(p, fmt.Sprintf("rule %d: no container %s", i, *c.ContainerName))
				}
				if c.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && slices.Contains(c.Values, 0) {
					p = append(p, fmt.Sprintf("rule %d: exit code 0 with operator In", i))
				}
				if !slices.IsSorted(c.Values) || len(slices.Compact(slices.Clone(c.Values))) != len(c.Values) {
					p = append(p, fmt.Sprintf("rule %d: exit codes not sorted and unique", i))
				}
			}
		}
	}
	for k, v := range pod.NodeSelector {
		add("nodeSelector key "+k, validation.IsQualifiedName(k))
		add("nodeSelector value "+v, validation.IsValidLabelValue(v))
	}
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		add("volume "+v.Name, validation.IsDNS1123Label(v.Name))
		if volumes[v.Name] {
			p = append(p, "volume "+v.Name+" twice")
		}
		volumes[v.Name] = true
		switch {
		case v.PersistentVolumeClaim != nil:
			add("claim", validation.IsDNS1123Subdomain(v.PersistentVolumeClaim.ClaimName))
		case v.ConfigMap != nil:
			add("configmap", validation.IsDNS1123Subdomain(v.ConfigMap.Name))
		default:
			p = append(p, "volume "+v.Name+" has no source")
		}
	}
	names := map[string]bool{}
	for _, c := range pod.Containers {
		add("container "+c.Name, validation.IsDNS1123Label(c.Name))
		if names[c.Name] {
			p = append(p, "container "+c.Name+" twice")
		}
		names[c.Name] = true
		if c.Image == "" {
			p = append(p, "container "+c.Name+": no image")
		}
		for _, e := range c.Env {
			add("env "+e.Name, validation.IsEnvVarName(e.Name))
		}
		for name, q := range c.Resources.Limits {
			add("limit "+string(name), validation.IsQualifiedName(string(name)))
			if _, err := resource.ParseQuantity(q.String()); err != nil {
				p = append(p, fmt.Sprintf("limit %s: %v", name, err))
			}
			if r, ok := c.Resources.Requests[name]; ok && strings.Contains(string(name), "/") && r.Cmp(q) != 0 {
				p = append(p, "extended resource "+string(name)+": requests differ from limits")
			}
		}
		mounts := map[string]bool{}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				p = append(p, "mount of a volume that does not exist: "+m.Name)
			}
			if !path.IsAbs(m.MountPath) || mounts[m.MountPath] {
				p = append(p, "mount path "+m.MountPath+" not absolute or used twice")
			}
			mounts[m.MountPath] = true
		}
	}
	return p
}

// validLabels returns the problems of a set of labels.
func validLabels(l map[string]string) []string {
	var p []string
	for k, v := range l {
		for _, e := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
			p = append(p, "label "+k+"="+v+": "+e)
		}
	}
	return p
}

// validConfigMap returns the problems of the ConfigMap.
func validConfigMap(cm *corev1.ConfigMap) []string {
	var p []string
	for _, e := range validation.IsDNS1123Subdomain(cm.Name) {
		p = append(p, "name: "+e)
	}
	if cm.Namespace != "" {
		for _, e := range validation.IsDNS1123Label(cm.Namespace) {
			p = append(p, "namespace: "+e)
		}
	}
	p = append(p, validLabels(cm.Labels)...)
	size := 0
	for k, v := range cm.Data {
		for _, e := range validation.IsConfigMapKey(k) {
			p = append(p, "key "+k+": "+e)
		}
		size += len(k) + len(v)
	}
	if size > corev1.MaxSecretSize {
		p = append(p, fmt.Sprintf("data of %d bytes, over %d", size, corev1.MaxSecretSize))
	}
	return p
}

// checkWiring checks that the objects fit together: the shard pods mount the ConfigMap that
// holds the experiment's very bytes and run it with --shard auto, and the merge reads where the
// shards write, on the same claim, with no GPU.
func checkWiring(t *testing.T, k sched.Kubernetes, d decoded) {
	t.Helper()
	key := path.Base(k.Experiment.Path)
	if got := d.configMap.Data[key]; got != string(k.Experiment.Source) {
		t.Errorf("the ConfigMap's %s is not the experiment file's bytes:\n%q\nwant\n%q", key, got, k.Experiment.Source)
	}
	pod := d.shards.Spec.Template.Spec
	var cmVolume, claim string
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil {
			cmVolume = v.ConfigMap.Name
		}
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if cmVolume != d.configMap.Name || claim != k.ResultsClaim {
		t.Errorf("shard pods mount ConfigMap %q and claim %q, want %q and %q", cmVolume, claim, d.configMap.Name, k.ResultsClaim)
	}
	if d.configMap.Namespace != k.Namespace || d.shards.Namespace != k.Namespace || d.merge.Namespace != k.Namespace {
		t.Errorf("the objects are in namespaces %q, %q and %q, want %q", d.shards.Namespace, d.merge.Namespace, d.configMap.Namespace, k.Namespace)
	}
	if d.shards.Name != k.Name || d.merge.Name != k.Name+"-merge" {
		t.Errorf("the Jobs are named %q and %q, want %q and %q-merge", d.shards.Name, d.merge.Name, k.Name, k.Name)
	}
	if p := d.shards.Spec.Parallelism; p == nil || int(*p) != k.Parallelism {
		t.Errorf("parallelism %v, want %d", p, k.Parallelism)
	}
	if _, ok := pod.Containers[0].Resources.Limits[corev1.ResourceName(k.GPUResource)]; !ok {
		t.Errorf("the shard pods' limits %v lack %s", pod.Containers[0].Resources.Limits, k.GPUResource)
	}
	script := strings.Join(pod.Containers[0].Command, " ")
	root := path.Join(k.ResultsMount, k.Name)
	for _, want := range []string{"runner /experiment/" + key + " --shard auto --results \"$root\"", "root=" + root + "/shard-\"$JOB_COMPLETION_INDEX\""} {
		if !strings.Contains(script, want) {
			t.Errorf("shard command lacks %q:\n%s", want, script)
		}
	}
	if got := pod.NodeSelector; len(got) != len(k.NodeSelector) {
		t.Errorf("node selector %v, want %v", got, k.NodeSelector)
	}
	for key, v := range k.NodeSelector {
		if got, ok := pod.NodeSelector[key]; !ok || got != v {
			t.Errorf("node selector %s=%q, want %q", key, got, v)
		}
	}
	mpod := d.merge.Spec.Template.Spec
	merge := strings.Join(mpod.Containers[0].Command, " ")
	if want := "runner merge -o " + root + "/merged " + root + "/shard-*/" + k.Experiment.Name + "/*/"; !strings.Contains(merge, want) {
		t.Errorf("merge command lacks %q:\n%s", want, merge)
	}
	if len(mpod.Containers[0].Resources.Limits) != 0 || mpod.NodeSelector != nil {
		t.Error("the merge pod asks for a GPU node")
	}
	if c := d.merge.Spec.Completions; c == nil || *c != 1 {
		t.Error("the merge Job is not one pod")
	}
	if mpod.Volumes[0].PersistentVolumeClaim == nil || mpod.Volumes[0].PersistentVolumeClaim.ClaimName != k.ResultsClaim {
		t.Error("the merge pod does not mount the results claim")
	}
	if sh, err := exec.LookPath("sh"); err == nil {
		for _, c := range [][]string{pod.Containers[0].Command, mpod.Containers[0].Command} {
			if out, err := exec.Command(sh, "-n", "-c", c[2]).CombinedOutput(); err != nil {
				t.Errorf("sh -n: %v\n%s\n%s", err, out, c[2])
			}
		}
	}
}

// TestConfigMapKeepsBytes checks that the experiment file goes through YAML unchanged whatever
// it holds: trailing spaces, tabs, no final line break, a document marker, non-ASCII text.
func TestConfigMapKeepsBytes(t *testing.T) {
	for _, src := range []string{
		"version: 1\nname: x\n",
		"version: 1   \n\tname: x",
		"---\nversion: 1\n...\n# é ü 日本\n\n\n",
		"a: \"quoted: yes\"\nb: |\n  literal\n---\n",
	} {
		k := sched.Kubernetes{Experiment: sched.Experiment{Path: "x.yaml", Name: "x", Source: []byte(src), Servers: 1}, Shards: 2, Image: "runner:1"}
		var out bytes.Buffer
		if err := k.Write(&out); err != nil {
			t.Fatal(err)
		}
		d := decodeStrict(t, out.Bytes())
		if got := d.configMap.Data["x.yaml"]; got != src {
			t.Errorf("ConfigMap holds %q, want %q", got, src)
		}
	}
}

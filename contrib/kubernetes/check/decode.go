package main

// Reading the manifests as the API server reads an object it is sent with
// strict field validation: YAML to JSON with duplicate keys refused, then
// sigs.k8s.io/json (the API machinery's decoder: case-sensitive, unlike
// encoding/json) into the API's own Go types with unknown and duplicate
// fields refused.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The types each kind is decoded into.
var kinds = map[schema.GroupVersionKind]func() any{
	{Group: "", Version: "v1", Kind: "Namespace"}:                            func() any { return &corev1.Namespace{} },
	{Group: "", Version: "v1", Kind: "Service"}:                              func() any { return &corev1.Service{} },
	{Group: "batch", Version: "v1", Kind: "Job"}:                             func() any { return &batchv1.Job{} },
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}:                        func() any { return &appsv1.DaemonSet{} },
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}:  func() any { return &monitoringv1.ServiceMonitor{} },
	{Group: "nfd.k8s-sigs.io", Version: "v1alpha1", Kind: "NodeFeatureRule"}: func() any { return &NodeFeatureRule{} },
}

// Object is one document of a manifest file, decoded.
type Object struct {
	// Where it is: the file and the document's place in it (from 1).
	Where string
	GVK   schema.GroupVersionKind
	// A pointer to the API type (*batchv1.Job, ...).
	Value any
}

// decodeStrict decodes JSON into v, refusing unknown and duplicate fields
// (field names compared case-sensitively, as the API server does).
func decodeStrict(data []byte, v any) error {
	strict, err := sigsjson.UnmarshalStrict(data, v, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// decodeDocument decodes one YAML document into the type of its
// apiVersion and kind; nil, nil for an empty document (only comments).
func decodeDocument(doc []byte) (*Object, error) {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, err
	}
	gvk := gv.WithKind(tm.Kind)
	make, ok := kinds[gvk]
	if !ok {
		return nil, fmt.Errorf("no type for apiVersion %q, kind %q", tm.APIVersion, tm.Kind)
	}
	v := make()
	if err := decodeStrict(data, v); err != nil {
		return nil, err
	}
	return &Object{GVK: gvk, Value: v}, nil
}

// decodeManifest decodes every document of a manifest's text (split on
// `---` lines, as kubectl splits them).
func decodeManifest(name string, text []byte) ([]Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(text)))
	var out []Object
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		o, err := decodeDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", name, i, err)
		}
		if o != nil {
			o.Where = fmt.Sprintf("%s, document %d", name, i)
			out = append(out, *o)
		}
	}
	return out, nil
}

// readManifest decodes a manifest file.
func readManifest(path string) ([]Object, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeManifest(filepath.Base(path), text)
}

// manifestFiles is every manifest of dir (its *.yaml), sorted.
func manifestFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	sort.Strings(files)
	return files, err
}

// objectsOf is the objects of one type among objs.
func objectsOf[T any](objs []Object) []*T {
	var out []*T
	for _, o := range objs {
		if v, ok := o.Value.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// onlyOne is the one object of its type among objs.
func onlyOne[T any](objs []Object) (*T, error) {
	all := objectsOf[T](objs)
	if len(all) != 1 {
		var t T
		return nil, fmt.Errorf("%d objects of type %T, one expected", len(all), t)
	}
	return all[0], nil
}

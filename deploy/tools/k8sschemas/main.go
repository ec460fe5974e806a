// Command k8sschemas writes strict JSON schemas for the Kubernetes kinds that
// erpgate's manifests use, in kubeconform's file layout
// (<kind><-group-version>.json), so that kubeconform can validate the
// kustomize output without fetching schemas from the network.
//
// The schemas are derived from the API's own Go types (k8s.io/api at the
// Kubernetes version kubeconform is told, and the prometheus-operator
// monitoring.coreos.com/v1 types for ServiceMonitor and PrometheusRule), the
// same way the upstream OpenAPI documents are: a field's JSON name comes
// from its json tag, a field without omitempty is required, and every
// object rejects properties it does not declare (kubeconform's -strict).
//
// Usage: go run ./k8sschemas -out DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var addToScheme = []func(*runtime.Scheme) error{
	corev1.AddToScheme,
	appsv1.AddToScheme,
	autoscalingv2.AddToScheme,
	batchv1.AddToScheme,
	networkingv1.AddToScheme,
	policyv1.AddToScheme,
	rbacv1.AddToScheme,
	monitoringv1.AddToScheme,
}

// special are types whose JSON form is not their Go structure.
var special = map[string]func() map[string]any{
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString": func() map[string]any {
		return map[string]any{"oneOf": []any{typ("string"), typ("integer")}}
	},
	"k8s.io/apimachinery/pkg/api/resource.Quantity": func() map[string]any {
		return map[string]any{"oneOf": []any{typ("string"), typ("number")}}
	},
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":      func() map[string]any { return typ("string") },
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime": func() map[string]any { return typ("string") },
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":  func() map[string]any { return typ("string") },
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":  func() map[string]any { return typ("object") },
	"k8s.io/apimachinery/pkg/runtime.RawExtension":   func() map[string]any { return map[string]any{} },
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON": func() map[string]any {
		return map[string]any{}
	},
}

var (
	marshaler   = reflect.TypeFor[json.Marshaler]()
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

func typ(t string) map[string]any { return map[string]any{"type": t} }

// gen builds one standalone schema; defs holds the named struct types it
// refers to.
type gen struct {
	defs map[string]any
}

func defName(t reflect.Type) string {
	return strings.ReplaceAll(t.PkgPath(), "/", ".") + "." + t.Name()
}

func (g *gen) schema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if f, ok := special[t.PkgPath()+"."+t.Name()]; ok {
		return f()
	}
	if t.Kind() == reflect.Struct && (t.Implements(marshaler) || reflect.PointerTo(t).Implements(unmarshaler)) {
		// A struct with its own JSON form that is not listed above: accept
		// anything rather than guess.
		fmt.Fprintf(os.Stderr, "k8sschemas: %s has a custom JSON form; any value accepted\n", defName(t))
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Bool:
		return typ("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return typ("integer")
	case reflect.Float32, reflect.Float64:
		return typ("number")
	case reflect.String:
		return typ("string")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return typ("string") // base64
		}
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		name := defName(t)
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = true // placeholder against recursion
			g.defs[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/definitions/" + name}
	}
	panic(fmt.Sprintf("k8sschemas: no schema for %s (%s)", t, t.Kind()))
}

// fields collects a struct's JSON properties, following inlined structs.
func (g *gen) fields(t reflect.Type, props map[string]any, required map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		inline := strings.Contains(","+opts+",", ",inline,") || (f.Anonymous && name == "")
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type)
		if !strings.Contains(","+opts+",", ",omitempty,") {
			required[name] = true
		}
	}
}

func (g *gen) object(t reflect.Type) map[string]any {
	props, req := map[string]any{}, map[string]bool{}
	g.fields(t, props, req)
	required := []string{}
	for name, s := range props {
		if req[name] {
			required = append(required, name)
		} else {
			props[name] = nullable(s.(map[string]any))
		}
	}
	sort.Strings(required)
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// nullable lets an optional field be written as null, as the API server
// accepts.
func nullable(s map[string]any) map[string]any {
	if len(s) == 0 {
		return s
	}
	if t, ok := s["type"].(string); ok {
		c := map[string]any{}
		for k, v := range s {
			c[k] = v
		}
		c["type"] = []any{t, "null"}
		return c
	}
	return map[string]any{"oneOf": []any{s, typ("null")}}
}

// fileName is kubeconform's {{.ResourceKind}}{{.KindSuffix}}.json.
func fileName(gvk schema.GroupVersionKind) string {
	suffix := "-" + gvk.Version
	if gvk.Group != "" {
		suffix = "-" + strings.ToLower(strings.Split(gvk.Group, ".")[0]) + suffix
	}
	return strings.ToLower(gvk.Kind) + suffix + ".json"
}

func main() {
	out := flag.String("out", "", "directory to write the schemas to")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: k8sschemas -out DIR")
		os.Exit(2)
	}
	scheme := runtime.NewScheme()
	for _, add := range addToScheme {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		panic(err)
	}
	n := 0
	for gvk, t := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasPrefix(t.PkgPath(), "k8s.io/apimachinery/") ||
			strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		g := &gen{defs: map[string]any{}}
		s := g.object(t)
		props := s["properties"].(map[string]any)
		props["apiVersion"] = map[string]any{"type": "string", "enum": []any{gvk.GroupVersion().String()}}
		props["kind"] = map[string]any{"type": "string", "enum": []any{gvk.Kind}}
		s["required"] = append([]string{"apiVersion", "kind"}, anyStrings(s["required"])...)
		s["definitions"] = g.defs
		b, err := json.MarshalIndent(s, "", " ")
		if err != nil {
			panic(err)
		}
		if err := os.WriteFile(filepath.Join(*out, fileName(gvk)), append(b, '\n'), 0o644); err != nil {
			panic(err)
		}
		n++
	}
	fmt.Printf("k8sschemas: %d schemas in %s\n", n, *out)
}

func anyStrings(v any) []string {
	s, _ := v.([]string)
	return s
}

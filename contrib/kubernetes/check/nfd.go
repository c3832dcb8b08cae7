package main

// Node Feature Discovery's NodeFeatureRule (nfd.k8s-sigs.io/v1alpha1),
// written from NFD's API reference and customization guide: NFD's Go
// module (sigs.k8s.io/node-feature-discovery/api/nfd) is not on the module
// proxy this check may use. Field names and JSON tags as NFD's types have
// them; decoded strictly like the API's own types.

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeFeatureRule holds rules that label, annotate and taint nodes by
// their features (cluster-scoped).
type NodeFeatureRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec NodeFeatureRuleSpec `json:"spec"`
}

// NodeFeatureRuleSpec is a list of rules.
type NodeFeatureRuleSpec struct {
	Rules []Rule `json:"rules"`
}

// Rule is one rule: what to do to a node its matchers match.
type Rule struct {
	Name              string               `json:"name"`
	Labels            map[string]string    `json:"labels,omitempty"`
	LabelsTemplate    string               `json:"labelsTemplate,omitempty"`
	Annotations       map[string]string    `json:"annotations,omitempty"`
	Vars              map[string]string    `json:"vars,omitempty"`
	VarsTemplate      string               `json:"varsTemplate,omitempty"`
	Taints            []corev1.Taint       `json:"taints,omitempty"`
	ExtendedResources map[string]string    `json:"extendedResources,omitempty"`
	MatchFeatures     []FeatureMatcherTerm `json:"matchFeatures,omitempty"`
	MatchAny          []MatchAnyElem       `json:"matchAny,omitempty"`
}

// MatchAnyElem is one alternative of matchAny.
type MatchAnyElem struct {
	MatchFeatures []FeatureMatcherTerm `json:"matchFeatures"`
}

// FeatureMatcherTerm matches the elements of one feature.
type FeatureMatcherTerm struct {
	Feature          string                      `json:"feature"`
	MatchExpressions map[string]*MatchExpression `json:"matchExpressions,omitempty"`
	MatchName        *MatchExpression            `json:"matchName,omitempty"`
}

// MatchExpression is an operator and its values.
type MatchExpression struct {
	Op    string   `json:"op"`
	Value []string `json:"value,omitempty"`
	Type  string   `json:"type,omitempty"`
}

// matchOps is each operator NFD knows and how many values it takes (-1:
// one or more).
var matchOps = map[string]int{
	"In": -1, "NotIn": -1, "InRegexp": -1,
	"Exists": 0, "DoesNotExist": 0,
	"Gt": 1, "Ge": 1, "Lt": 1, "Le": 1,
	"GtLt": 2, "GeLe": 2,
	"IsTrue": 0, "IsFalse": 0,
}

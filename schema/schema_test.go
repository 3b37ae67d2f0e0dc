package schema

import (
	"encoding/json"
	"testing"
)

// TestEmbedded checks that the embedded document is a JSON Schema draft-07 object that rejects
// unknown top-level keys. The experiment package tests it against the decoder in detail.
func TestEmbedded(t *testing.T) {
	var doc struct {
		Schema               string         `json:"$schema"`
		Type                 string         `json:"type"`
		AdditionalProperties *bool          `json:"additionalProperties"`
		Required             []string       `json:"required"`
		Properties           map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(Experiment, &doc); err != nil {
		t.Fatalf("embedded schema is not JSON: %v", err)
	}
	if doc.Schema != "http://json-schema.org/draft-07/schema#" || doc.Type != "object" {
		t.Errorf("$schema %q, type %q", doc.Schema, doc.Type)
	}
	if doc.AdditionalProperties == nil || *doc.AdditionalProperties {
		t.Error("unknown top-level keys are not rejected")
	}
	if len(doc.Required) != 2 || doc.Properties["version"] == nil || doc.Properties["name"] == nil {
		t.Errorf("required %v; want version and name", doc.Required)
	}
}

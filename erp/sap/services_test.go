package sap

import (
	"os"
	"path/filepath"
	"testing"
)

// TestServicesArePublished holds every OData service the client calls to
// one SAP publishes: each has SAP's $metadata in ../shared/sapspecs, the
// published files beside the repository.
func TestServicesArePublished(t *testing.T) {
	const dir = "../../../shared/sapspecs"
	entries, err := os.ReadDir(dir)
	if err != nil {
		abs, _ := filepath.Abs(dir)
		t.Fatalf("SAP's published $metadata files are missing (%s): %v", abs, err)
	}
	have := map[string]bool{}
	for _, e := range entries {
		have[e.Name()] = true
	}
	if len(servicePaths) == 0 {
		t.Fatal("the client calls no service")
	}
	for svc, name := range servicePaths {
		if !have[name+".edmx"] && !have["OP_"+name+".edmx"] && !have["OP_"+name+"_SRV.edmx"] {
			t.Errorf("service %s (%s): SAP publishes no $metadata of that name in %s", svc, name, dir)
		}
	}
}

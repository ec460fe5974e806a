package sim

import (
	"fmt"
	"net/http"
	"strings"
)

// metadata is a minimal EDMX document listing the service's entity sets and
// function imports, the latter with their parameters and the complex types
// they return, enough for clients that fetch CSRF tokens with it.
func metadata(svc *service) response {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n")
	b.WriteString(`<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">`)
	b.WriteString(`<edmx:DataServices m:DataServiceVersion="2.0">`)
	fmt.Fprintf(&b, `<Schema Namespace="%s" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">`, svc.name)
	writeComplexTypes(&b, svc)
	fmt.Fprintf(&b, `<EntityContainer Name="%s_Entities" m:IsDefaultEntityContainer="true">`, svc.name)
	for _, name := range svc.setOrder {
		fmt.Fprintf(&b, `<EntitySet Name="%s" EntityType="%s.%s"/>`, name, svc.name, svc.sets[name].typ)
	}
	writeFunctionImports(&b, svc)
	b.WriteString(`</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>`)
	return textResponse(http.StatusOK, "application/xml", b.String())
}

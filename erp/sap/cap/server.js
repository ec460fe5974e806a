// SAP CAP serving SAP's published $metadata (imported with `cds import`
// into srv/external of the temporary project this file is copied into) as
// OData V2 below /sap/opu/odata/sap/<SERVICE>, the way SAP's gateway
// publishes them, through @cap-js-community/odata-v2-adapter. Data comes
// from data/<SERVICE>/<Set>.json, written at test time from the
// simulator's answers (cmd/erpgate/cap_test.go).
//
// What is ours and not CAP's, kept minimal:
//   - the imported services are external (@cds.external, persistence
//     skipped); they are made served services with tables here;
//   - Post (a function import of API_SUPPLIERINVOICE_PROCESS_SRV, an
//     unbound action after the import) sets the invoice's
//     SupplierInvoiceStatus to '5' (posted) and answers Success: true;
//     an invoice that does not exist is a 404;
//   - the golden set is inserted at start from data/<SERVICE>/<Set>.json,
//     the simulator's OData V2 answers (the "results" of each entity set)
//     as the test read them, converted to CAP's values by the imported
//     model's element types (/Date(ms)/ to a date or a timestamp, PT..H..M..S
//     to a time; navigation properties and __metadata dropped). The server
//     prints "erpgate-cap ready" once they are in;
//   - a POST without Content-Type is given application/json (below);
//   - no CSRF layer: CAP sends no X-CSRF-Token, as an SAP system with the
//     check switched off, and erpgate posts without one.
const cds = require('@sap/cds')

const prefix = '/sap/opu/odata/sap/'

// SAP's $metadata declares its navigation properties without referential
// constraints, so `cds import` makes them associations with no foreign
// keys ({ }), which CAP cannot expand. Each gets the on condition SAP's
// implementation has: the target's key properties that the source entity
// has too (header to items, item to header, business partner to supplier).
function joinOn(csn, def, name, assoc) {
  const target = csn.definitions[assoc.target]
  const on = []
  for (const [k, e] of Object.entries(target.elements)) {
    if (!e.key || !def.elements[k] || def.elements[k].target) continue
    if (on.length) on.push('and')
    on.push({ ref: [name, k] }, '=', { ref: [k] })
  }
  if (!on.length) return
  delete assoc.keys
  assoc.on = on
}

cds.on('loaded', (csn) => {
  for (const [name, def] of Object.entries(csn.definitions)) {
    delete def['@cds.external']
    delete def['@cds.persistence.skip']
    if (def.kind === 'entity') {
      for (const [n, e] of Object.entries(def.elements)) {
        if (e.target && Array.isArray(e.keys) && e.keys.length === 0) joinOn(csn, def, n, e)
      }
    }
    if (def.kind === 'service') {
      def['@protocol'] = [
        { kind: 'odata-v4', path: '/odata/v4/' + name },
        { kind: 'odata-v2', path: prefix + name },
      ]
    }
  }
})

// erpgate calls a function import as SAP Gateway takes it: a POST with
// its parameters in the URL and no body, so no Content-Type. The adapter
// maps URL parameters into the V4 action's body only for a request of
// Content-Type application/json; without it Post arrives with no
// parameters. Such a POST is given that Content-Type before the adapter.
cds.prependListener('bootstrap', (app) => {
  app.use(prefix, (req, res, next) => {
    if (req.method === 'POST' && !req.headers['content-type']) req.headers['content-type'] = 'application/json'
    next()
  })
})

cds.on('served', (services) => {
  const srv = services.API_SUPPLIERINVOICE_PROCESS_SRV
  if (!srv) return
  srv.on('Post', async (req) => {
    const { SupplierInvoice, FiscalYear } = req.data
    const entity = srv.entities.A_SupplierInvoice
    const n = await UPDATE(entity)
      .set({ SupplierInvoiceStatus: '5' })
      .where({ SupplierInvoice, FiscalYear })
    if (!n) return req.reject(404, `Supplier invoice ${SupplierInvoice} ${FiscalYear} does not exist`)
    return { Success: true }
  })
})

const fs = require('fs')
const path = require('path')

function convert(elem, v) {
  if (v === null || v === undefined) return v
  const m = typeof v === 'string' && /^\/Date\((-?\d+)([+-]\d+)?\)\/$/.exec(v)
  if (m) {
    const iso = new Date(Number(m[1])).toISOString()
    if (elem.type === 'cds.Date') return iso.slice(0, 10)
    if (elem.type === 'cds.DateTime') return iso.slice(0, 19) + 'Z'
    return iso
  }
  const t = elem.type === 'cds.Time' && typeof v === 'string' && /^PT(\d+)H(\d+)M(\d+)S$/.exec(v)
  if (t) return t.slice(1).map((x) => x.padStart(2, '0')).join(':')
  return v
}

async function loadData(dir) {
  let n = 0
  for (const svc of fs.readdirSync(dir)) {
    for (const file of fs.readdirSync(path.join(dir, svc))) {
      const name = svc + '.' + path.basename(file, '.json')
      const entity = cds.model.definitions[name]
      if (!entity) throw new Error(`data for ${name}, which the imported model does not have`)
      const rows = JSON.parse(fs.readFileSync(path.join(dir, svc, file), 'utf8')).map((r) => {
        const row = {}
        for (const [k, v] of Object.entries(r)) {
          const elem = entity.elements[k]
          if (!elem || elem.isAssociation) continue
          row[k] = convert(elem, v)
        }
        return row
      })
      if (rows.length) await cds.db.run(INSERT.into(name).entries(rows))
      n += rows.length
    }
  }
  return n
}

module.exports = async (options) => {
  const server = await cds.server(options)
  const n = await loadData(path.join(cds.root, 'data'))
  console.log(`erpgate-cap ready: ${n} records`)
  return server
}

import Foundation

/// Emulation of DocuSign eSignature REST v2.1 templates:
/// `GET /restapi/v2.1/accounts/{accountId}/templates[/{templateId}]`.
enum DocuSignAPI {
    static func handle(_ request: FixtureRequest, store: FixtureStore, origin: String) -> FixtureReply {
        let s = request.segments
        guard s.count >= 5, s[0] == "restapi", s[1] == "v2.1", s[2] == "accounts", s[4] == "templates", s.count <= 6 else {
            return .docuSignError(404, "INVALID_REQUEST_PARAMETER", "The URL provided does not resolve to a resource.")
        }
        if let token = store.token, request.headers["authorization"] != "Bearer " + token {
            return .docuSignError(401, "USER_AUTHENTICATION_FAILED", "One or both of Username and Password are invalid.")
        }
        var reply = store.withLock { () -> FixtureReply in
            let now = Int64(Date().timeIntervalSince1970)
            if store.rateReset <= now {
                store.rateReset = (now / 3600 + 1) * 3600
                store.rateRemaining = store.rateLimit
            }
            if let limit = store.burstLimit, store.burstReset <= now {
                store.burstReset = now + store.burstWindow
                store.burstRemaining = limit
            }
            var reply: FixtureReply
            if store.rateRemaining <= 0 {
                reply = .docuSignError(429, "HOURLY_APIINVOCATION_LIMIT_EXCEEDED",
                                       "The maximum number of hourly API invocations has been exceeded.")
            } else if store.burstLimit != nil, store.burstRemaining <= 0 {
                store.burstRejections += 1
                reply = .docuSignError(store.burstRefusalStatus, "BURST_APIINVOCATION_LIMIT_EXCEEDED",
                                       "The maximum number of API invocations per burst window has been exceeded.")
            } else {
                store.rateRemaining -= 1
                if store.burstLimit != nil { store.burstRemaining -= 1 }
                reply = s.count == 5
                    ? list(request, store: store, account: s[3], origin: origin)
                    : template(request, store: store, account: s[3], id: s[5])
            }
            reply.headers += [("X-RateLimit-Limit", String(store.rateLimit)),
                              ("X-RateLimit-Remaining", String(max(0, store.rateRemaining))),
                              ("X-RateLimit-Reset", String(store.rateReset))]
            if let limit = store.burstLimit {
                reply.headers += [("X-BurstLimit-Limit", String(limit)),
                                  ("X-BurstLimit-Remaining", String(max(0, store.burstRemaining)))]
                if store.burstResetSent { reply.headers.append(("X-BurstLimit-Reset", String(store.burstReset))) }
            }
            return reply
        }
        reply.headers.append(("Date", FixtureTime.httpDate(Int64(Date().timeIntervalSince1970))))
        return reply
    }

    /// `GET .../templates`: caller holds the lock.
    private static func list(_ request: FixtureRequest, store: FixtureStore, account: String, origin: String) -> FixtureReply {
        let count = request.query("count").map { Int($0) } ?? 100
        let start = request.query("start_position").map { Int($0) } ?? 0
        guard let count, let start, count >= 1, start >= 0 else {
            return .docuSignError(400, "INVALID_REQUEST_PARAMETER", "The request contained at least one invalid parameter.")
        }
        var rows = store.templates.filter { !$0.inRecycleBin }
        if let from = request.query("modified_from_date") {
            guard let ticks = FixtureTime.parse(from) else {
                return .docuSignError(400, "INVALID_REQUEST_PARAMETER", "Invalid value for modified_from_date.")
            }
            rows = rows.filter { $0.lastModified >= ticks }
        }
        let descending = request.query("order") == "desc"
        switch request.query("order_by") ?? "modified" {
        case "name": rows.sort { ($0.name, $0.id) < ($1.name, $1.id) }
        default: rows.sort { ($0.lastModified, $0.id) < ($1.lastModified, $1.id) }
        }
        if descending { rows.reverse() }
        let page = start < rows.count ? Array(rows[start..<min(rows.count, start + min(count, 2000))]) : []
        var body: [String: Any] = [
            "resultSetSize": String(page.count), "startPosition": String(start),
            "endPosition": String(max(start, start + page.count - 1)), "totalSetSize": String(rows.count), "folders": [],
        ]
        if !page.isEmpty { body["envelopeTemplates"] = page.map { summary($0, account: account) } }
        func pageURI(_ position: Int) -> String {
            var items = request.queryItems.filter { $0.0 != "start_position" }
            items.insert(("start_position", String(position)), at: 0)
            let query = items.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.1)" }
                .joined(separator: "&")
            return (store.nextUriPrefix ?? "/restapi/v2.1/accounts/") + "\(account)/templates?\(query)"
        }
        if start + page.count < rows.count {
            let path = pageURI(start + page.count)
            body["nextUri"] = store.foreignOrigin.map { $0 + path } ?? path
        } else {
            body["nextUri"] = ""
        }
        body["previousUri"] = start > 0 ? pageURI(max(0, start - count)) : ""
        return .json(body)
    }

    private static func summary(_ t: Template, account: String) -> [String: Any] {
        [
            "templateId": t.id, "name": t.name, "description": t.description, "shared": "false",
            "created": FixtureTime.docuSign(t.created), "lastModified": FixtureTime.docuSign(t.lastModified),
            "uri": "/templates/\(t.id)", "folderId": "f0a1b2c3-0000-4000-8000-000000000001", "folderName": "Templates",
            "owner": ["userName": "Fixture Owner", "userId": "00000000-0000-4000-8000-0000000000aa", "email": "owner@example.org"],
            "pageCount": 1, "passwordProtected": "false",
        ]
    }

    /// `GET .../templates/{id}`: caller holds the lock.
    private static func template(_ request: FixtureRequest, store: FixtureStore, account: String, id: String) -> FixtureReply {
        guard let t = store.templates.first(where: { $0.id == id }) else {
            // As DocuSign's API documents it: a 400 for every error, this one included.
            return .docuSignError(400, "TEMPLATE_ID_INVALID", "Invalid template ID.")
        }
        let etag = "\"\(t.lastModified)\""
        if request.headers["if-none-match"] == etag { return FixtureReply(status: 304, headers: [("ETag", etag)]) }
        var body = summary(t, account: account)
        body["emailSubject"] = "Please sign: \(t.name)"
        body["status"] = "created"
        body["documents"] = [["documentId": "1", "name": "\(t.name).pdf", "order": "1", "pages": "1", "uri": "/documents/1"]]
        body["recipients"] = [
            "signers": [["recipientId": "1", "roleName": "Signer", "routingOrder": "1", "recipientType": "signer"]],
            "recipientCount": "1",
        ]
        return .json(body, headers: [("ETag", etag)])
    }
}

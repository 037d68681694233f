import Foundation

/// Signs, in a `rest` listing's first page, that the configured paging stopped short of the
/// collection: a next link or cursor it did not follow (`paging=link` on a server that links
/// pages in the body, `paging=none` on a paged one, a `next-field` pointer that is not there),
/// or a total larger than the items listed (pages counted from 0 with `page` paging). A
/// misconfigured paging otherwise mirrors the first page alone and says nothing: the listing
/// ends, complete in its own eyes. These are warnings: a key that only looks like a link or a
/// count (a `total` that is a sum) must not stop a sync.
struct RestPagingCheck {
    let paging: RestUpstream.Paging
    let itemsPath: String
    /// Redacts credentials from text quoted in a warning.
    let redact: (String) -> String

    /// Keys whose integer value is taken for the number of items the collection holds.
    static let totalKeys: Set<String> = [
        "count", "total", "totalcount", "total_count", "totalitems", "total_items", "totalelements", "total_elements",
        "totalresults", "total_results", "totalrecords", "total_records", "total_entries", "totalsetsize",
    ]

    /// The warnings for a listing that read `pages` pages (`first` the first one, parsed as
    /// `json`) and got `listed` items; empty when nothing looks amiss.
    func warnings(first: HTTPResult, json: JSONValue, pages: Int, listed: Int, complete: Bool) -> [String] {
        var warnings: [String] = []
        let link = pages == 1 ? nextLink(in: json) : nil
        switch paging {
        case .none where pages == 1:
            if let header = LinkHeader.target(in: first.headerValues("Link"), relation: "next") {
                warnings.append("the listing read one page, and the response links a next one in its Link header "
                                + "(\(quoted(header))): set paging=link")
            } else if let link {
                warnings.append(unfollowed(link))
            }
        case .link where pages == 1 && LinkHeader.target(in: first.headerValues("Link"), relation: "next") == nil:
            if let link { warnings.append(unfollowed(link)) }
        case .nextField(let pointer) where pages == 1 && json.at(pointer: pointer) == nil:
            if let link, link.pointer != pointer { warnings.append(unfollowed(link) + " (there is nothing at \(pointer))") }
        default:
            break
        }
        if warnings.isEmpty, complete, let total = announcedTotal(first, json: json), total.value > listed {
            warnings.append("the listing got \(listed) item\(listed == 1 ? "" : "s"), but the response says there are \(total.value) "
                            + "(\(total.pointer)): is paging set right? (" + Self.pagingNow(paging) + ")")
        }
        return warnings
    }

    private func unfollowed(_ link: (pointer: String, value: String)) -> String {
        let bare = !link.value.contains(where: { "/?:".contains($0) })
        return "the listing read one page, and the response has a next \(bare ? "cursor" : "link") at \(link.pointer) "
            + "(\(quoted(link.value))): set paging=\(bare ? "cursor" : "next-field"):\(link.pointer)"
    }

    private static func pagingNow(_ paging: RestUpstream.Paging) -> String {
        switch paging {
        case .none: return "paging=none reads one page"
        case .page: return "paging=page starts at firstPage, 1 unless set to 0"
        case .offset: return "paging=offset"
        case .link: return "paging=link follows Link headers"
        case .nextField(let pointer): return "paging=next-field:\(pointer)"
        case .cursor(let pointer): return "paging=cursor:\(pointer)"
        }
    }

    private func quoted(_ text: String) -> String {
        "'" + CQuoting.excerpt(text, limit: 120, redact: redact) + "'"
    }

    /// The first member, in objects up to three levels down (not in arrays, nor at `itemsPath`),
    /// whose key names a next page and whose value is a non-empty string or a link object's
    /// `href`: its JSON pointer and value.
    private func nextLink(in json: JSONValue) -> (pointer: String, value: String)? {
        var found: (pointer: String, value: String)?
        walk(json, at: "", depth: 0) { pointer, key, value in
            guard found == nil, key.lowercased().contains("next") else { return }
            switch value {
            case .string(let text) where !text.isEmpty:
                found = (pointer, text)
            case .object(let fields):
                if case .string(let href)? = fields["href"], !href.isEmpty { found = (pointer + "/href", href) }
            default:
                break
            }
        }
        return found
    }

    /// Whether a listing's page is a JSON:API document: its items at `/data`, each with a `type`
    /// and `attributes` (or a top-level `jsonapi` member). Such an API answers an item's URL
    /// with `{"data": <item>}` too (JSON:API 1.1, "Fetching Resources").
    static func isJSONAPI(_ json: JSONValue, itemsPath: String) -> Bool {
        guard itemsPath == "/data", case .object(let top) = json else { return false }
        if top["jsonapi"] != nil { return true }
        guard case .array(let rows)? = top["data"], case .object(let row)? = rows.first,
              case .string? = row["type"], case .object? = row["attributes"] else { return false }
        return true
    }

    /// The number of items a page says the collection holds, and where it says it: in a header
    /// (json-server's and many others' `X-Total-Count`), else in the body (``total(in:)``).
    func announcedTotal(_ page: HTTPResult, json: JSONValue) -> (pointer: String, value: Int64)? {
        let header = ["X-Total-Count", "X-Total", "Total-Count"].lazy.compactMap { name in
            page.header(name).flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }.map { (pointer: "header \(name)", value: $0) }
        }.first
        return header ?? total(in: json)
    }

    /// The largest integer under a key in ``totalKeys``, as ``nextLink(in:)`` looks for links.
    private func total(in json: JSONValue) -> (pointer: String, value: Int64)? {
        var found: (pointer: String, value: Int64)?
        walk(json, at: "", depth: 0) { pointer, key, value in
            guard Self.totalKeys.contains(key.lowercased()), let number = value.integerText.flatMap({ Int64($0) }),
                  number > (found?.value ?? -1) else { return }
            found = (pointer, number)
        }
        return found
    }

    private func walk(_ value: JSONValue, at pointer: String, depth: Int, _ visit: (String, String, JSONValue) -> Void) {
        guard depth < 3, case .object(let fields) = value else { return }
        for (key, member) in fields.members {
            let path = pointer + "/" + JSONValue.pointerStep(key)
            guard path != itemsPath else { continue }
            visit(path, key, member)
            walk(member, at: path, depth: depth + 1, visit)
        }
    }
}

// When should a JSONObject start keeping a key index? A model of its scheme (linear search up to a threshold, then
// an index built once and kept), counted in instructions so a busy machine does not blur it:
//
//   swiftc -O loadtest/json/IndexThreshold.swift -o /tmp/index-threshold
//   ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null /tmp/index-threshold "$@" 2>&1 | awk '/Collected/ {gsub(",", "", $4); print $4}'; }
//   echo $(( ($(ir 48 32 1000 long) - $(ir 48 32 0 long)) / 1000 ))   # instructions to build one object of 48 long keys
//
// Arguments: keys per object, threshold (-1: never index), objects to build, "long" for 20-byte keys (else 2-4 bytes).
struct M { var key: String; var value: Int }
@inline(never) func linearBuild(_ keys: [String]) -> Int {
    var members: [M] = []
    for k in keys { if let i = members.firstIndex(where: { $0.key == k }) { members[i].value += 1 } else { members.append(M(key: k, value: 0)) } }
    return members.count
}
/// JSONObject's scheme: linear up to `threshold`, then an index built once and kept.
@inline(never) func thresholdBuild(_ keys: [String], _ threshold: Int) -> Int {
    var members: [M] = []; var index: [String: Int]? = nil
    for k in keys {
        let found: Int? = index != nil ? index![k] : members.firstIndex(where: { $0.key == k })
        if let i = found { members[i].value += 1; continue }
        if index != nil { index![k] = members.count }
        members.append(M(key: k, value: 0))
        if index == nil && members.count > threshold {
            var p = [String: Int](minimumCapacity: members.count)
            for (i, m) in members.enumerated() { p[m.key] = i }
            index = p
        }
    }
    return members.count
}
let a = CommandLine.arguments
let n = Int(a[1])!, threshold = Int(a[2])!, reps = Int(a[3])!, long = a.count > 4
let keys = (0..<n).map { (long ? "custom_field_name_" : "k") + "\($0)" }
var x = 0
for _ in 0..<reps { x &+= threshold < 0 ? linearBuild(keys) : thresholdBuild(keys, threshold) }
print(x)

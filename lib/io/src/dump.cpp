// The attn-dump JSON format, a JSON reader that accepts Python's NaN/Infinity,
// and whole-or-nothing file output (see attn/io/dump.hpp).
#include "attn/io/dump.hpp"
#include "attn/io/guards.hpp"

#include <cerrno>
#include <cfloat>
#include <climits>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/core/errors.hpp"

namespace attn {

const char* json_nonfinite_name(JsonNonFinite v) {
    switch (v) {
        case JsonNonFinite::literal: return "literal";
        case JsonNonFinite::string: return "string";
        case JsonNonFinite::null: return "null";
    }
    return "?";
}

std::string json_float(float v, JsonNonFinite nonfinite) {
    if (v == 0.0f && std::signbit(v)) return "-0.0";  // "-0" would read back as the integer 0
    if (std::isfinite(v)) return fmt::format("{}", v);  // shortest text that reads back to the same float
    if (nonfinite == JsonNonFinite::null) return "null";
    const char* token = std::isnan(v) ? "NaN" : v < 0 ? "-Infinity" : "Infinity";
    return nonfinite == JsonNonFinite::string ? fmt::format("\"{}\"", token) : token;
}

void append_json_floats(std::string& out, const float* p, int64_t n, JsonNonFinite nonfinite) {
    out += '[';
    for (int64_t i = 0; i < n; ++i) {
        if (i) out += ", ";
        out += json_float(p[i], nonfinite);
    }
    out += ']';
}

std::string dump_to_string(const Dump& d, JsonNonFinite nonfinite) {
    std::string out;
    // Reserved once: growing by doubling would hold the old and the new text at once.
    double floats = 0;
    for (const auto& [n, t] : d.tensors) floats += static_cast<double>(t.data.size());
    out.reserve(static_cast<size_t>(floats * kJsonBytesPerFloat) + 256 * (d.tensors.size() + 1) +
                d.config.dump().size());
    out += "{\n  \"format\": " + nlohmann::json(d.format).dump();
    out += ",\n  \"version\": " + std::to_string(d.version);
    out += ",\n  \"config\": " + json_text(d.config, -1, nonfinite);
    out += ",\n  \"seed\": " + std::to_string(d.seed);
    out += ",\n  \"tensors\": {";
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const auto& n : d.order)
        if (d.tensors.count(n) && seen.insert(n).second) names.push_back(n);
    for (const auto& [n, t] : d.tensors)
        if (seen.insert(n).second) names.push_back(n);
    bool first = true;
    for (const auto& n : names) {
        const Tensor& t = d.tensors.at(n);
        out += first ? "\n    " : ",\n    ";
        first = false;
        out += nlohmann::json(n).dump() + ": {\"shape\": " + nlohmann::json(t.shape).dump() + ", \"data\": ";
        append_json_floats(out, t.ptr(), t.numel(), nonfinite);
        out += '}';
    }
    out += "\n  }\n}\n";
    return out;
}

int json_depth(std::string_view text, int cap) {
    int depth = 0, worst = 0;
    bool in_str = false, esc = false;
    for (char c : text) {
        if (in_str) {
            if (esc) esc = false;
            else if (c == '\\') esc = true;
            else if (c == '"') in_str = false;
            continue;
        }
        if (c == '"') in_str = true;
        else if (c == '[' || c == '{') {
            worst = std::max(worst, ++depth);
            if (worst > cap) return worst;
        } else if (c == ']' || c == '}') depth = std::max(0, depth - 1);
    }
    return worst;
}

void check_json_depth(std::string_view text, std::string_view what) {
    if (json_depth(text, kMaxJsonDepth) > kMaxJsonDepth)
        throw InputError(fmt::format("{}: JSON nested deeper than {} levels", what, kMaxJsonDepth));
}

nlohmann::json parse_json(std::string_view text, std::string_view what) {
    check_json_depth(text, what);
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        std::string msg = e.what();
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        throw InputError(fmt::format("{}: not valid JSON ({})", what, msg));
    }
}

nlohmann::json parse_json_relaxed(std::string_view text, std::string_view what) {
    check_json_depth(text, what);
    // Outside strings, rewrite the bare tokens NaN, Infinity, -Infinity as the
    // strings "NaN", "Infinity", "-Infinity"; readers of numbers accept those.
    // Text holding neither word (most files) is parsed as it is, without the copy.
    const bool bare_tokens =
        text.find("NaN") != std::string_view::npos || text.find("Infinity") != std::string_view::npos;
    std::string s;
    if (bare_tokens) s.reserve(text.size() + 64);
    bool in_str = false;
    for (size_t i = 0; bare_tokens && i < text.size(); ++i) {
        const char c = text[i];
        if (in_str) {
            s += c;
            if (c == '\\' && i + 1 < text.size()) s += text[++i];
            else if (c == '"') in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
            s += c;
            continue;
        }
        bool replaced = false;
        for (std::string_view tok :
             {std::string_view("-Infinity"), std::string_view("Infinity"), std::string_view("NaN")}) {
            if (text.substr(i, tok.size()) == tok) {
                s += '"';
                s += tok;
                s += '"';
                i += tok.size() - 1;
                replaced = true;
                break;
            }
        }
        if (!replaced) s += c;
    }
    try {
        return bare_tokens ? nlohmann::json::parse(s) : nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        std::string msg = e.what();
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        throw InputError(fmt::format("{}: not valid JSON ({})", what, msg));
    }
}

static float json_to_float(const nlohmann::json& v, std::string_view what, const std::string& name) {
    if (v.is_number()) {
        // Beyond float's range (1e39) a cast is undefined: such a number is an infinity in float32.
        const double d = v.get<double>();
        if (std::fabs(d) > FLT_MAX) return d > 0 ? INFINITY : -INFINITY;
        return static_cast<float>(d);
    }
    if (v.is_null()) return NAN;  // --json-nonfinite null: the value is lost
    if (v.is_string()) {
        const auto& s = v.get_ref<const std::string&>();
        if (s == "NaN") return NAN;
        if (s == "Infinity") return INFINITY;
        if (s == "-Infinity") return -INFINITY;
    }
    throw InputError(fmt::format("{}: tensor '{}' has a non-numeric entry (a JSON {})", what, name, v.type_name()));
}

Dump dump_from_string(std::string_view text, std::string_view what) {
    const nlohmann::json j = parse_json_relaxed(text, what);
    if (!j.is_object()) throw InputError(fmt::format("{}: the top level must be a JSON object", what));
    Dump d;
    if (!j.contains("format") || !j["format"].is_string())
        throw InputError(fmt::format("{}: missing \"format\" (expected \"attn-dump\")", what));
    d.format = j["format"].get<std::string>();
    if (d.format != "attn-dump")
        throw InputError(fmt::format("{}: format is \"{}\", expected \"attn-dump\"", what, d.format));
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int64_t>() != 1)
        throw InputError(fmt::format("{}: unsupported \"version\" (this attn reads version 1)", what));
    d.version = 1;
    if (j.contains("config")) {
        if (!j["config"].is_object()) throw InputError(fmt::format("{}: \"config\" must be an object", what));
        d.config = j["config"];
    }
    if (j.contains("seed")) {
        if (!j["seed"].is_number_unsigned())
            throw InputError(fmt::format("{}: \"seed\" must be a non-negative integer", what));
        d.seed = j["seed"].get<uint64_t>();
    }
    if (!j.contains("tensors") || !j["tensors"].is_object())
        throw InputError(fmt::format("{}: missing \"tensors\" object", what));
    for (const auto& [name, tj] : j["tensors"].items()) {
        if (!tj.is_object() || !tj.contains("shape") || !tj.contains("data") || !tj["shape"].is_array() ||
            !tj["data"].is_array())
            throw InputError(fmt::format("{}: tensor '{}' needs \"shape\" and \"data\" arrays", what, name));
        Shape shape;
        for (const auto& dj : tj["shape"]) {
            if (!dj.is_number_unsigned())
                throw InputError(
                    fmt::format("{}: tensor '{}' has a shape entry that is not a non-negative integer", what, name));
            const uint64_t dim = dj.get<uint64_t>();
            if (dim > static_cast<uint64_t>(INT64_MAX))
                throw InputError(fmt::format("{}: tensor '{}' has a huge dimension", what, name));
            shape.push_back(static_cast<int64_t>(dim));
        }
        if (shape.size() > 8)
            throw InputError(fmt::format("{}: tensor '{}' has rank {} (at most 8)", what, name, shape.size()));
        int64_t n = 0;
        try {
            n = shape_numel(shape);
        } catch (const InputError&) {
            throw InputError(fmt::format("{}: tensor '{}' has shape {} that overflows", what, name, shape_str(shape)));
        }
        const auto& data = tj["data"];
        if (n != static_cast<int64_t>(data.size()))
            throw InputError(fmt::format("{}: tensor '{}' has shape {} ({} values) but {} data values", what, name,
                                         shape_str(shape), n, data.size()));
        Tensor t;
        t.shape = shape;
        t.data.reserve(data.size());
        for (const auto& v : data) t.data.push_back(json_to_float(v, what, name));
        d.order.push_back(name);
        d.tensors[name] = std::move(t);
    }
    return d;
}

std::string file_kind_problem(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return errno == ENOENT || errno == ENOTDIR ? std::string("is missing")
                                                   : fmt::format("cannot be examined ({})", std::strerror(errno));
    if (S_ISREG(st.st_mode)) return "";
    if (S_ISDIR(st.st_mode)) return "is a folder, not a file";
    return "is not a regular file (a FIFO, a device or a socket)";
}

std::string read_file(const std::string& path) {
    // O_NONBLOCK: opening a FIFO with no writer must not hang before the check below.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw InputError(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const bool folder = S_ISDIR(st.st_mode);
        ::close(fd);
        throw InputError(fmt::format("{}: {}", path, folder ? "is a folder, not a file" : "is not a regular file"));
    }
    std::string out;
    out.reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            throw InputError(fmt::format("{}: read error ({})", path, std::strerror(e)));
        }
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
}

Dump read_dump_file(const std::string& path) { return dump_from_string(read_file(path), path); }

// Writes all of `content` to fd; returns 0 or the errno of the failure.
static int write_all(int fd, std::string_view content) {
    size_t done = 0;
    while (done < content.size()) {
        const ssize_t w = ::write(fd, content.data() + done, content.size() - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        done += static_cast<size_t>(w);
    }
    return 0;
}

[[noreturn]] static void throw_unwritable(const std::string& path, int e) {
    throw InputError(fmt::format("'{}' cannot be written ({})", path, std::strerror(e)));
}

// The temp file being written, for the signal handler to remove: TERM, INT or
// HUP during a large write would otherwise leave it behind. A fixed buffer and
// unlink keep the handler async-signal-safe; writes happen one at a time.
static char g_temp_path[PATH_MAX];
static volatile sig_atomic_t g_temp_active = 0;

// An open OutputBatch's temp files held back from their targets, and the folders it made, in
// the order made: the handler removes them last first (a folder's files before the folder).
constexpr int kMaxHeld = 64;
static char g_held_path[kMaxHeld][PATH_MAX];
static volatile sig_atomic_t g_held_is_folder[kMaxHeld];
static volatile sig_atomic_t g_held_count = 0;

static void remove_held_from(int first) {
    for (int i = g_held_count - 1; i >= first; --i)
        if (g_held_is_folder[i]) ::rmdir(g_held_path[i]);
        else ::unlink(g_held_path[i]);
}

extern "C" void remove_temp_and_reraise(int sig) {
    if (g_temp_active) ::unlink(g_temp_path);
    remove_held_from(0);
    ::signal(sig, SIG_DFL);
    ::raise(sig);  // delivered when the handler returns: the process ends as the signal says
}

// Installs the handler on signals whose action is the default, at every write
// (three sigaction calls, nothing beside an fsync): a program that set a
// signal back to its default since the last write gets the cleanup again.
static void install_temp_cleanup() {
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
        struct sigaction sa {};
        sa.sa_handler = remove_temp_and_reraise;
        sigemptyset(&sa.sa_mask);
        ::sigaction(sig, &sa, nullptr);
    }
}

// The file a write to `path` lands in, as open(path, O_CREAT) would reach it:
// the path itself, or, through symlinks, the file they point to. A dangling
// link resolves to the (missing) file it names, so the write creates that file
// and the link stays a link, as `cat > link` does. Errors name `path`.
std::string write_target(const std::string& path) {
    // An existing device, FIFO or socket is written in place through the path itself: /dev/stdout
    // and /dev/fd/63 (bash's >(cmd)) are links to "pipe:[N]", which is no path to resolve.
    if (struct stat st {}; ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return path;
    if (char* real = ::realpath(path.c_str(), nullptr)) {
        std::string target = real;
        std::free(real);
        return target;
    }
    std::string cur = path;
    for (int hops = 0; hops < 40; ++hops) {  // 40: the kernel's own limit (ELOOP)
        struct stat st {};
        if (::lstat(cur.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
        std::string link(PATH_MAX, '\0');
        const ssize_t n = ::readlink(cur.c_str(), link.data(), link.size());
        if (n < 0 || n >= static_cast<ssize_t>(link.size())) throw_unwritable(path, n < 0 ? errno : ENAMETOOLONG);
        link.resize(static_cast<size_t>(n));
        if (link.empty()) throw_unwritable(path, ENOENT);
        if (link[0] != '/') {
            const size_t slash = cur.rfind('/');
            link = (slash == std::string::npos ? std::string() : cur.substr(0, slash + 1)) + link;
        }
        cur = link;
    }
    throw_unwritable(path, ELOOP);
}

// The open OutputBatch: what its held temp files become at commit() (g_held_path holds the
// temp names, "" for a folder).
static bool g_batch_open = false;
static std::vector<std::string> g_held_target;

// With signals held: records a written temp file for the open batch (false: no batch, or it
// holds as many as it can, and the file is renamed at once).
static bool hold_for_batch(const std::string& tmp, const std::string& target) {
    if (!g_batch_open || g_held_count >= kMaxHeld) return false;
    std::memcpy(g_held_path[g_held_count], tmp.c_str(), tmp.size() + 1);  // shorter than the template checked
    g_held_is_folder[g_held_count] = 0;
    g_held_target.push_back(target);
    g_held_count = g_held_count + 1;
    return true;
}

static void signals_held(bool hold, sigset_t* previous) {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&s, sig);
    if (hold) ::pthread_sigmask(SIG_BLOCK, &s, previous);
    else ::pthread_sigmask(SIG_SETMASK, previous, nullptr);
}

OutputBatch::OutputBatch() {
    if (g_batch_open) throw std::logic_error("OutputBatch: one is already open");
    g_held_target.reserve(kMaxHeld);  // no allocation while signals are held
    g_batch_open = true;
}

OutputBatch::~OutputBatch() {
    sigset_t previous;
    signals_held(true, &previous);
    remove_held_from(0);  // not committed: the run failed, and leaves nothing it made
    g_held_count = 0;
    g_held_target.clear();
    g_batch_open = false;
    signals_held(false, &previous);
}

void OutputBatch::commit() {
    sigset_t previous;
    signals_held(true, &previous);
    int failed = -1, err = 0;
    for (int i = 0; i < g_held_count && failed < 0; ++i)
        if (!g_held_is_folder[i] && std::rename(g_held_path[i], g_held_target[static_cast<size_t>(i)].c_str()) != 0)
            failed = i, err = errno;
    // renamed files are the targets' now; only what is left after a failure is removed
    const std::string target = failed >= 0 ? g_held_target[static_cast<size_t>(failed)] : std::string();
    if (failed >= 0) {
        for (int i = g_held_count - 1; i >= failed; --i)
            if (!g_held_is_folder[i]) ::unlink(g_held_path[i]);
    }
    g_held_count = 0;
    g_held_target.clear();
    g_batch_open = false;
    signals_held(false, &previous);
    if (failed >= 0) throw_unwritable(target, err);
}

void create_folders(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::vector<fs::path> missing;  // the deepest first
    fs::path start = fs::absolute(dir, ec).lexically_normal();
    if (!start.has_filename()) start = start.parent_path();  // "D/" is D
    for (fs::path p = start; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
        if (p == p.parent_path()) break;
        missing.push_back(p);
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        sigset_t previous;
        signals_held(true, &previous);  // made and recorded with no signal between
        const bool made = ::mkdir(it->c_str(), 0777) == 0;
        const int e = errno;
        const bool record = made && g_batch_open && g_held_count < kMaxHeld && it->native().size() < PATH_MAX;
        if (record) {
            std::memcpy(g_held_path[g_held_count], it->c_str(), it->native().size() + 1);
            g_held_is_folder[g_held_count] = 1;
            g_held_target.emplace_back();
            g_held_count = g_held_count + 1;
        }
        signals_held(false, &previous);
        if (!made && e != EEXIST)
            throw InputError(fmt::format("cannot create the folder '{}': {}", dir, std::strerror(e)));
    }
    if (!fs::is_directory(dir, ec))
        throw InputError(fmt::format("cannot create the folder '{}': it is not a folder", dir));
}

// The process's umask (umask() can only be read by setting it; attn writes from one thread).
static mode_t current_umask() {
    const mode_t m = ::umask(0);
    ::umask(m);
    return m;
}

void write_file_atomic(const std::string& path, std::string_view content) {
    if (path == "-") {
        if (std::fwrite(content.data(), 1, content.size(), stdout) != content.size() || std::fflush(stdout) != 0)
            throw InputError("cannot write to standard output");
        return;
    }
    if (path.empty()) throw InputError("the file name is empty");
    // A symlink stays a symlink: the file it points to is the one replaced (or created).
    const std::string target = write_target(path);
    struct stat st {};
    const bool exists = ::stat(target.c_str(), &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("'{}' cannot be written (it is a folder)", path));
        // A device or FIFO (/dev/null, a pipe) is written in place: renaming over it would replace it.
        const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) throw_unwritable(path, errno);
        const int e = write_all(fd, content);
        if (::close(fd) != 0 && e == 0) throw_unwritable(path, errno);
        if (e != 0) throw_unwritable(path, e);
        return;
    }
    // The temp file sits in the target's folder so the rename is atomic (same file
    // system). Its name is short and fixed in length (".attn.XXXXXX"), not the
    // target's name plus a suffix: a legal name of 245-255 bytes would overflow NAME_MAX.
    const size_t slash = target.rfind('/');
    const std::string tmpl = (slash == std::string::npos ? std::string() : target.substr(0, slash + 1)) +
                             std::string(kTempFilePrefix) + "XXXXXX";
    if (tmpl.size() >= sizeof g_temp_path) throw_unwritable(path, ENAMETOOLONG);
    install_temp_cleanup();
    // TERM, INT and HUP wait while the file is created and its name recorded, so no
    // signal falls between the two and leaves a temp file the handler does not know.
    // The mask is this thread's: attn writes when its worker threads have ended
    // (parallel_for joins them), so no other thread can take the signal meanwhile.
    sigset_t cleanup_signals, previous;
    sigemptyset(&cleanup_signals);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&cleanup_signals, sig);
    ::pthread_sigmask(SIG_BLOCK, &cleanup_signals, &previous);
    std::memcpy(g_temp_path, tmpl.c_str(), tmpl.size() + 1);
    const int fd = mkstemp(g_temp_path);
    const int mkstemp_errno = errno;
    g_temp_active = fd >= 0 ? 1 : 0;
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (fd < 0) throw_unwritable(path, mkstemp_errno);
    const std::string tmp(g_temp_path);
    int e = write_all(fd, content);
    if (e == 0 && ::fsync(fd) != 0) e = errno;
    if (::close(fd) != 0 && e == 0) e = errno;
    // The mode: a replaced file's own (a 0600 file stays 0600), else 0666 less the umask, as
    // open(O_CREAT) gives (mkstemp's 0600 would hide a new file from its group).
    if (e == 0) ::chmod(tmp.c_str(), exists ? (st.st_mode & 07777) : (0666 & ~current_umask()));
    // Held again from the rename until the name is forgotten: once renamed, the temp
    // name is free for another writer, whose file the handler must never unlink.
    ::pthread_sigmask(SIG_BLOCK, &cleanup_signals, &previous);
    if (e == 0 && hold_for_batch(tmp, target)) {  // an open OutputBatch renames it at commit()
        g_temp_active = 0;
        ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        return;
    }
    if (e == 0 && std::rename(tmp.c_str(), target.c_str()) != 0) e = errno;
    if (e != 0) ::unlink(tmp.c_str());
    g_temp_active = 0;
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (e != 0) throw_unwritable(path, e);
}

}  // namespace attn

//! The read-only list, program by program: every option each program takes (GNU coreutils
//! 9, grep 3, diffutils 3, file 5, tree 2, ripgrep 14, findutils 4.9), and the ones that
//! make it write, run a program, read a list of file names, or follow links out of a folder
//! it walks. Decided once here and documented in the README.
//!
//! Must never: list as harmless an option that writes, runs, or reads a file given in its
//! value without marking that value a file (`=FILE`, `path`). An option left out only costs
//! a question; a wrong entry is a hole. None of these programs reads `@file` response files;
//! one added that does (`gcc`, `javac`) must read its `@` operands as lists of names.
//!
//! git: any option before the subcommand (`-c`, `-C`, `--exec-path`, `--config-env`,
//! `--git-dir`, `-p`) leaves the list, as does every subcommand but those that only read;
//! `--upload-pack` belongs to none of them. What git runs from its configuration (hooks,
//! pagers, `diff.external`) no option shows: the read-only sandbox contains it.

/// How one program's options are read (see [`super::options`]).
pub(super) struct Spec {
    /// One-letter options that take nothing (digits for `-NUM`).
    pub flags: &'static str,
    /// One-letter options whose value is text: a pattern, a number, a format.
    pub text: &'static str,
    /// One-letter options whose value is a file the program reads.
    pub path: &'static str,
    /// One-letter options whose value is optional and only ever attached.
    pub optional: &'static str,
    /// Long options without `--`, split by spaces: `name`, `name=` (text), `name=FILE`,
    /// `name[=]` (optional).
    pub long: &'static str,
    /// `-x` and `--name` that write, run a program, read a list of names or follow links
    /// out, split by spaces; a long one is refused in every abbreviation too.
    pub refused: &'static str,
    /// Options not listed are refused. `false` only for programs that open no file by an
    /// option (`echo`, `uname` …) and for `git`, whose log and diff options number in the
    /// hundreds: there an option word may not hold `/` or `~`, an attached value is checked
    /// as a file, and `refused` holds those that write or run (its config can run programs
    /// whatever the options: that is the read-only sandbox's to contain).
    pub closed: bool,
    /// A value-taking letter takes the next word and its cluster goes on (`tree -LP 2 x`).
    pub values_follow: bool,
    /// The option without which the program reads a folder's files through their links.
    pub folders_through_links: Option<&'static str>,
}

const CLOSED: Spec = Spec {
    flags: "",
    text: "",
    path: "",
    optional: "",
    long: "help version",
    refused: "",
    closed: true,
    values_follow: false,
    folders_through_links: None,
};

/// Programs that read no file by an option; their operands are still checked.
const OPEN: Spec = Spec {
    closed: false,
    ..CLOSED
};

/// `git` subcommands that only read.
pub(super) const GIT_READ_ONLY: &[&str] = &["status", "log", "diff", "show", "blame", "rev-parse", "ls-files"];

pub(super) const GIT: Spec = Spec {
    long: "",
    refused: "--output --ext-diff --textconv --show-signature",
    ..OPEN
};

/// The read-only list but `git` and `find`: the spec of `program`, if it is on it.
pub(super) fn spec(program: &str) -> Option<&'static Spec> {
    Some(match program {
        "pwd" | "echo" | "printf" | "true" | "false" | "basename" | "dirname" | "realpath" | "readlink" | "whoami"
        | "id" | "uname" | "which" => &OPEN,
        "ls" => &LS,
        "cat" => &CAT,
        "head" => &HEAD,
        "tail" => &TAIL,
        "wc" => &WC,
        "grep" | "egrep" | "fgrep" => &GREP,
        "rg" => &RG,
        "stat" => &STAT,
        "file" => &FILE,
        "du" => &DU,
        "tree" => &TREE,
        "cut" => &CUT,
        "tr" => &TR,
        "diff" => &DIFF,
        "cmp" => &CMP,
        "nl" => &NL,
        "date" => &DATE,
        "sort" => &SORT,
        _ => return None,
    })
}

const LS: Spec = Spec {
    flags: "aAbBcCdDfFgGhHiklmnNopqQrRsStuUvxXZ1",
    text: "ITw",
    long: "all almost-all author escape block-size= ignore-backups color[=] classify[=] directory dired \
           file-type format= full-time group-directories-first no-group human-readable si \
           dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink[=] \
           indicator-style= inode ignore= kibibytes literal numeric-uid-gid hide-control-chars \
           show-control-chars quote-name quoting-style= reverse recursive size sort= time= time-style= \
           tabsize= width= context zero help version",
    // With `-R`, into every linked folder.
    refused: "-L --dereference",
    ..CLOSED
};

const CAT: Spec = Spec {
    flags: "AbeEnstTuv",
    long: "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting help version",
    ..CLOSED
};

const HEAD: Spec = Spec {
    flags: "qvz0123456789",
    text: "cn",
    long: "bytes= lines= quiet silent verbose zero-terminated help version",
    ..CLOSED
};

const TAIL: Spec = Spec {
    flags: "fFqvz0123456789",
    text: "cns",
    long: "bytes= follow[=] lines= max-unchanged-stats= pid= quiet silent retry sleep-interval= verbose \
           zero-terminated help version",
    ..CLOSED
};

const WC: Spec = Spec {
    flags: "clLmw",
    long: "bytes chars lines max-line-length words total= help version",
    refused: "--files0-from",
    ..CLOSED
};

const GREP: Spec = Spec {
    flags: "0123456789EFGHIPTUVabchiLlnoqrsuvwxyZz",
    text: "ABCDXdem",
    path: "f",
    long: "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file=FILE ignore-case \
           no-ignore-case invert-match word-regexp line-regexp count color[=] colour[=] files-without-match \
           files-with-matches max-count= only-matching quiet silent no-messages byte-offset with-filename \
           no-filename label= line-number initial-tab null null-data after-context= before-context= \
           context= group-separator= no-group-separator text binary-files= devices= directories= exclude= \
           exclude-from=FILE exclude-dir= include= recursive line-buffered binary help version",
    refused: "-R --dereference-recursive",
    ..CLOSED
};

const RG: Spec = Spec {
    flags: "abcFHhIilNnopqSsUuVvwx0.",
    text: "ABCdEegjMmrTt",
    path: "f",
    long: "after-context= before-context= context= binary no-binary block-buffered no-block-buffered \
           byte-offset no-byte-offset case-sensitive color= colors= column no-column context-separator= \
           no-context-separator count count-matches crlf no-crlf debug dfa-size-limit= encoding= \
           no-encoding engine= field-context-separator= field-match-separator= file=FILE files \
           files-with-matches files-without-match fixed-strings no-fixed-strings no-follow glob= \
           glob-case-insensitive no-glob-case-insensitive heading no-heading hidden no-hidden iglob= \
           ignore-case ignore-file=FILE ignore-file-case-insensitive no-ignore-file-case-insensitive \
           include-zero no-include-zero invert-match no-invert-match json no-json line-buffered \
           no-line-buffered line-number no-line-number line-regexp max-columns= max-columns-preview \
           no-max-columns-preview max-count= max-depth= max-filesize= mmap no-mmap multiline no-multiline \
           multiline-dotall no-multiline-dotall no-config no-ignore no-ignore-dot no-ignore-exclude \
           no-ignore-files no-ignore-global no-ignore-messages no-ignore-parent no-ignore-vcs no-messages \
           no-pcre2-unicode no-require-git no-unicode null null-data one-file-system no-one-file-system \
           only-matching passthru path-separator= pcre2 no-pcre2 pcre2-version no-pre pretty quiet \
           regex-size-limit= regexp= replace= no-search-zip smart-case sort= sortr= sort-files \
           no-sort-files stats no-stats stop-on-nonmatch text no-text threads= trace trim no-trim type= \
           type-add= type-clear= type-list type-not= unrestricted vimgrep with-filename no-filename \
           word-regexp help version",
    // `--pre` and `--hostname-bin` run a program, `-z` runs decompressors, `-L` follows links.
    refused: "-L -z --pre --pre-glob --hostname-bin --follow --search-zip",
    ..CLOSED
};

const STAT: Spec = Spec {
    flags: "Lft",
    text: "c",
    long: "dereference file-system cached= format= printf= terse help version",
    ..CLOSED
};

const FILE: Spec = Spec {
    flags: "0bcdEhikLlNnrsv",
    text: "eFP",
    long: "apple brief checking-printout debug exclude= exclude-quiet= extension separator= no-dereference \
           mime mime-type mime-encoding keep-going list dereference no-buffer no-pad print0 parameter= raw \
           special-files help version",
    // `-C` writes `<magic>.mgc`, `-p` sets access times back, `-f` reads names from a
    // file, `-m` a colon-separated list of magic files, `-z` runs decompressors, `-S`
    // turns its own seccomp sandbox off.
    refused: "-C -p -f -m -z -Z -S --compile --preserve-date --files-from --magic-file --uncompress \
              --uncompress-noreport --no-sandbox",
    ..CLOSED
};

const DU: Spec = Spec {
    flags: "0abcDHhklmPSsx",
    text: "Bdt",
    path: "X",
    long: "all apparent-size block-size= bytes total dereference-args max-depth= null no-dereference \
           one-file-system separate-dirs summarize threshold= human-readable si inodes time[=] time-style= \
           exclude= exclude-from=FILE count-links help version",
    refused: "-L --dereference --files0-from",
    ..CLOSED
};

const TREE: Spec = Spec {
    flags: "adfxqNQpugshDFvtcUriASnCXJ",
    text: "LPIHT",
    long: "gitignore gitfile=FILE ignore-case matchdirs metafirst prune info infofile=FILE noreport \
           charset= filelimit= timefmt= si du inodes device dirsfirst filesfirst sort= nolinks hintro=FILE \
           houtro=FILE fflinks help version",
    // `-o` writes, `-R` writes `00Tree.html` in every folder, `-l` follows links, the
    // `--from…` pair read a listing from a file.
    refused: "-o -R -l --output --fromfile --fromtabfile",
    values_follow: true,
    ..CLOSED
};

const CUT: Spec = Spec {
    flags: "nsz",
    text: "bcdf",
    long: "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= \
           zero-terminated help version",
    ..CLOSED
};

const TR: Spec = Spec {
    flags: "cCdst",
    long: "complement delete squeeze-repeats truncate-set1 help version",
    ..CLOSED
};

const DIFF: Spec = Spec {
    flags: "0123456789abBcdeEfhHinNpPqrstTuvwyZ",
    text: "CDFILSUWx",
    path: "X",
    long: "normal brief report-identical-files context[=] unified[=] ed rcs side-by-side width= left-column \
           suppress-common-lines show-c-function show-function-line= label= expand-tabs initial-tab \
           tabsize= suppress-blank-empty recursive no-dereference new-file unidirectional-new-file \
           ignore-file-name-case no-ignore-file-name-case exclude= exclude-from=FILE starting-file= \
           from-file=FILE to-file=FILE ignore-case ignore-tab-expansion ignore-trailing-space \
           ignore-space-change ignore-all-space ignore-blank-lines ignore-matching-lines= text \
           strip-trailing-cr ifdef= old-group-format= new-group-format= unchanged-group-format= \
           changed-group-format= line-format= old-line-format= new-line-format= unchanged-line-format= \
           minimal horizon-lines= speed-large-files color[=] palette= help version",
    // `-l` pipes the output through `pr`.
    refused: "-l --paginate",
    folders_through_links: Some("--no-dereference"),
    ..CLOSED
};

const CMP: Spec = Spec {
    flags: "bclsv",
    text: "in",
    long: "print-bytes ignore-initial= verbose bytes= quiet silent help version",
    ..CLOSED
};

const NL: Spec = Spec {
    flags: "p",
    text: "bdfhilnsvw",
    long: "body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= \
           join-blank-lines= number-format= no-renumber number-separator= starting-line-number= \
           number-width= help version",
    ..CLOSED
};

const DATE: Spec = Spec {
    flags: "Ru",
    text: "d",
    path: "r",
    optional: "I",
    long: "date= debug iso-8601[=] reference=FILE resolution rfc-3339= rfc-email rfc-822 rfc-2822 universal \
           utc uct help version",
    // `-s` sets the clock; `-f` reads dates from a file and echoes the lines it cannot parse.
    refused: "-s -f --set --file",
    ..CLOSED
};

const SORT: Spec = Spec {
    flags: "bcCdfghiMmnRrsuVz",
    text: "kSty",
    long: "ignore-leading-blanks check[=] dictionary-order ignore-case general-numeric-sort \
           ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort random-source=FILE \
           reverse sort= version-sort batch-size= debug key= merge stable buffer-size= field-separator= \
           parallel= unique zero-terminated help version",
    // `-o` writes; `--compress-program` runs a program on its temporary files (`sh` runs
    // them); `-T` writes those files where it is told.
    refused: "-o -T --output --compress-program --files0-from --temporary-directory",
    ..CLOSED
};

/// `find`'s options, tests, actions and operators that only read and take no word after
/// them (`-newerXY` is read apart).
pub(super) const FIND_FLAGS: &str =
    "-H -P ( ) ! , -a -and -o -or -not -depth -d -daystart -ignore_readdir_race -noignore_readdir_race \
     -mount -xdev -noleaf -nowarn -warn -empty -executable -readable -writable -nogroup -nouser -false \
     -true -print -print0 -ls -prune -quit -help --help -version --version";

/// `find`'s tests and options that take the next word.
pub(super) const FIND_VALUED: &str =
    "-D -maxdepth -mindepth -regextype -amin -anewer -atime -cmin -cnewer -ctime -fstype -gid -group \
     -ilname -iname -inum -ipath -iregex -iwholename -links -lname -mmin -mtime -name -newer -path \
     -perm -regex -samefile -size -type -uid -used -user -wholename -xtype -context -printf";

/// `find`'s words that write, run a program, read names from a file or follow links.
pub(super) const FIND_REFUSED: &str =
    "-L -follow -exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls -files0-from";

# gtk-sanitizer-env.sh: sourced by the GTK examples' tests.
#
# In the sanitizer builds, LSAN_OPTIONS and TSAN_OPTIONS name one
# suppression file each (tests/lsan.supp, tests/tsan.supp). A GTK example
# adds its own suppressions for GTK's libraries (gtk-fractal/lsan-gtk.supp
# and tsan-gtk.supp say why each is there) by writing both into one file:
#
#   add_suppressions VARIABLE OUTFILE FILE[:FILE...]
#
# appends the FILEs to the file VARIABLE names, writes the result to
# OUTFILE and points VARIABLE at it. Without VARIABLE set (a plain build),
# it does nothing.
# (shellcheck cannot see the uses of $others and the export inside eval.)
# shellcheck disable=SC2034,SC2163,SC2148
add_suppressions ()
{
  eval "options=\${$1:-}"
  [ -n "$options" ] || return 0
  base=$(printf '%s' "$options" | tr ':' '\n' | sed -n 's/^suppressions=//p')
  others=$(printf '%s' "$options" | tr ':' '\n' | grep -v '^suppressions=' | tr '\n' ':')
  {
    if [ -n "$base" ]; then cat "$base"; fi
    printf '%s\n' "$3" | tr ':' '\n' | while read -r file; do cat "$file"; done
  } > "$2"
  eval "$1=\"\${others}suppressions=\$2\""
  export "$1"
}

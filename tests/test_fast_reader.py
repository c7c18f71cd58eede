"""Chunks read by the fast path (shell/fast.py) give exactly the model bashlex gives.

bashlex is the parser of record. For every chunk :func:`sbatch_lsp.shell.fast.read` accepts, the
chunk's text is parsed alone both ways and the models compared (commands, spans, words,
assignments, background and substitution flags, in order). The check runs on every rule-page
example and case, on a list of tricky chunks, on the generated corpus (tests/sbatch_corpus.py),
and on the real corpus when ``CORPUS_DIR`` names a folder of job scripts (never committed).
"""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbatch_lsp.shell import fast
from sbatch_lsp.shell.parse import MAX_BASHLEX_CHUNK, parse, read_chunk
from sbatch_lsp.shell.words import TextMap

import sbatch_corpus
from rule_pages import sample_scripts
from shell_models import model_key, real_corpus

TRICKY = [
    "srun --ntasks=2 \\\n  python train.py \\\n  --lr 3e-4",
    "srun \\\n    python x.py \\\n    # a comment\n",
    "cd \"$DIR\" && make || echo failed",
    "cat a | grep b | wc -l > n.txt",
    "sleep 10 & wait",
    "a | b &",
    "a && b &",
    "a; b; c;",
    "NODES=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\")",
    "HEAD=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)",
    "echo \"start: $(date +%s) on $(hostname)\"",
    "X=$(a $(b $(c)))",
    "X=$(a \"$(b)\")",
    "echo $(echo ')') \"$(echo \"a b\")\"",
    "PORT=$((10000 + RANDOM))",
    "X=`date`",
    "echo $(a &)",
    "echo $( )",
    "echo $(a # c\n)",
    "echo $(\n a\n b\n)",
    "x=$(a \\\n b)",
    "a &&\n  b ||\n  # why\n  c",
    "a |\n b",
    "a && ",
    "a ;; b",
    "a |& b",
    "echo x\\\ny",
    "if true; then a; fi",
    "if [ -f x ]; then\n  a\nelif b; then c; else d; fi",
    "if [[ -f \"$X\" && -n $Y ]]; then a; fi",
    "if [[ ! -d $DIR ]]; then mkdir -p $DIR; fi",
    "[[ -n $X ]] && a",
    "[[ $X =~ ^a(b)$ ]]",
    "for x in a $(ls) b; do\n  echo $x\ndone",
    "for x in a; do b & done",
    "for ((i=0; i<3; i++)); do a; done",
    "while read l; do a; done < f",
    "while read l; do a; done < $(f)",
    "until a; do b; done 2>&1 | tee log",
    "until [ -f x ]\ndo\n  sleep 5\ndone",
    "while [ -f x ]\ndo\n  sleep 5\ndone",
    "if a; then b\nelif c; then d\nelif e; then f\nfi",
    "if a; then b\nelif c; then d\nelse e\nfi",
    "a | while read x\ndo\n  B=$(echo $x)\n  M=$(realpath $I/$B.m)\ndone",
    "while read x;\ndo\n  b\ndone",
    "if a; then b; fi > log && c",
    "{ a; b; } > log",
    "f() { a; }",
    "f () {\n  srun x \"$@\"\n}",
    "f() {\n  g() { a; }\n}",
    "function f { a; }",
    "if a; then\n  for x in 1 2; do\n    while b; do c; done\n  done\nfi",
    "if a then b; fi",
    "if a; then fi",
    "for x in a b\ndo\n  a\ndone # end",
    "cat <<EOF\nx\nEOF",
    "echo a>b",
    "diff <(a) <(b)",
    "tee >(cat) > $(date).log 2>&1",
    "export A=$(a) B=\"$(b)\" C",
    "A=$(a) B=2 cmd $(c) > \"$(d)\"",
    "! a && b",
    "time srun x",
    "echo 'multi\nline'",
    "echo \"multi\nline\"",
    "arr=($(ls))",
    "echo ${X:-$(date)}",
    "exec > >(tee log) 2>&1",
    "srun bash -c \"torchrun --node-rank=$SLURM_NODEID train.py\" &",
    # backslashes inside double quotes (bashlex misplaces a `$(…)` after a backslash-newline
    # in the same word, so that word goes to bashlex)
    'echo "a \\" $(b) c"',
    'X="\\$(a) $(b)"',
    'echo "a\\\\" $(b)',
    'export CMD=" \\\n    $(pwd)/x.py \\\n    --tp $TP \\\n    "',
    'echo "x \\\n y" $(b)',
    'A="\\`date\\`" $(c)',
    'x=$(echo "a \\\n b")',
    # arithmetic, arrays, wider parameter expansions, here-strings
    "PORT=$((10000 + RANDOM % 100))",
    'echo $((a*(b+1))) "$((c))" $(( ${#X} - 1 ))',
    "x=$(seq 1 $((N-1)))",
    "N=$(( $(nproc) / 2 ))",
    "X=$(( 16#ff ))",
    'arr=(a b "c d")',
    "arr=()",
    "arr+=(--x 1)\nsrun ${arr[@]}",
    "declare -a A=(1 2) B",
    "arr=(a\n  b # c )\n  d)",
    "arr=($(ls) x)",
    "arr=(`ls`)",
    "X='$(ls)'",
    "A=1 B='$(x)' c",
    'a=${arr[@]} b "${#arr[*]}" ${a[$i]}',
    'X=${X:-$HOME/x} ${1} ${10:-a} ${X:-${Y}}',
    'MODEL="${1:-\'Q/Qwen\'}"',
    'X=${X:-"a b"} Y=${Y:-\'c d\'}',
    ': "${F:=/l/${J}_$(basename ${C}).sq}"',
    'read a b <<< "$X"',
    "read -a x <<< $(echo a b)",
    "cat 0<<<$X >out",
    # backquotes
    'echo "a `hostname` b" `c d | e`',
    'A=`echo $X` B="`pwd`"',
    "echo `a $(b)`",
    "echo `a \\` b`",
    "f() { X=`a`; }",
    "X=`a; b`",
    "X=`a)`",
    # braces, quotes over lines, `function`, `!`
    "find . -name x -exec rm {} ;",
    "parallel -j 2 $E {} ::: a b\necho a{b,c}d }{ {x",
    "{ echo a; }",
    'export CMD=" \\\n    -m train \\\n    --out $X"\nsrun $CMD',
    "echo 'a\nb' $(c) \"d\ne\" `f`",
    'x=$(echo "a\nb" c)',
    "function f() {\n  a $(b)\n}",
    "function f {\n  a\n}\nf",
    "function  g ()\n{\n  # c\n  a\n}",
    "f() { a; } > log",
    "function f() { a; } 2>&1 >log; b",
    "! a",
    "while ! a; do b; done",
    "if ! a | b; then c; fi",
    "! a &",
    "a && ! b",
    "! ! a",
    # `&` inside compound commands, blanks inside ${…}
    "for i in 1 2; do\n  srun x $i &\ndone\nwait",
    "if a; then b & c; fi",
    "{ a & } ; b",
    "f() {\n a &\n b\n}",
    "for i in 1; do a | b & done",
    "a && for i in 1; do b & done",
    "for i in 1; do a && b & done",
    "x=$(for i in 1; do a & done)",
    'PROMPT="${PROMPT:-What is AI?}" ${X:-a b} c',
    'x=${X// /_} "${Y:- a ;b}" $(c)',
    # descriptor targets before a newline, an operator or `)`
    "if a; then\n  echo x >&2\n  exit 1\nfi",
    "a 2>&1; b 2>&1|c 2>&- && d >&2&",
    "x=$(a 2>&1) y=$(b 2>&1 | c)",
    "a 2>&1)",
    # here-documents (a quoted delimiter: behind the masks)
    "cat << EOF > f\na $x\nEOF",
    "cat <<EOF\nx\nEOF\necho b",
    "cat <<- EOF | b\n\tx\n\tEOF\n",
    "a <<A <<B\n1\nA\n2\nB",
    "cat <<EOF\nEOF",
    "cat <<'EOF' > x\na $(b)\nEOF\nc",
    'sbatch <<"EOF"\n#SBATCH -N 2\nsrun x\nEOF',
    "cat <<EOF && b\nx\nEOF",
    "cat <<EOF # c\nx\nEOF",
    "cat <<EOF\nx\nEOF2",
    "a &&\ncat <<EOF\nx\nEOF",
    "cat <<EOF; b\nx\nEOF\nc",
    "cat <<EOF2 >f\n$(x)\n EOF2\nEOF2",
    "f() {\n  cat <<EOF\nx\nEOF\n}",
    "if a; then\n  cat > f <<EOF\nx\nEOF\nfi",
    'X=$(cat <<EOF\nx\nEOF\n)',
    # shapes the fast path reads behind bashlex's masks (parse.read_chunk)
    'case "$1" in\n  a|b) echo $(x) ;;\n  *) y\n    ;;\nesac',
    "case $X in a) ;; esac > log && b",
    "if (( N > 1 )); then a; fi",
    "(( i++ ))",
    "for ((i=0; i<N; i++)); do srun x $i & done\nwait",
    "if [[ -n $A && $B == x ]]; then c; fi",
    "time srun x",
    "while true\ndo\n  a\ndone",
    "X=$(a && b)",
    # subshells
    "(a; b) > log & c",
    "( cd x && make ) &\nwait",
    "x=1; (echo $(date)) 2>&1",
    "for i in 1 2; do\n  (\n    a $i\n  ) &\ndone\nwait",
    "(a) b",
    "( )",
    "! (a)",
    "(a)|b",
    "a && (b; c)",
    "(a &\nb)",
    "( (a) )",
    "(a\n# c\n)",
    "(cat <<EOF\nx\nEOF\n)",
    "f() (a)",
    "(a) > $(b)",
    "x=$( (a) )",
    "(echo a)b",
    "(arr=(1 2); echo ${arr[@]})",
    # backslash escapes outside quotes
    "echo \\$(a)", "echo a\\ b", "echo it\\'s", "x=\\`a\\` b", "a \\; b", "echo \\\\",
    "find . -name x -exec rm {} \\;", "echo \\( a \\)", "A=a\\ b cmd", "echo $X\\$(y)",
    "echo \\#x", "echo \\\\$(a)", "arr=(a\\ b)", "cmd 2\\>x", "echo \\$x $(y)",
    'x=a\\"$(b)', "echo a\\`b\\` `c`", "\\ls -l", "echo \\", "echo a\\|b | c",
    # a backslash-newline right after a word
    "srun a\\\n  b", "srun a\\\n\t-log x", 'srun "$a"\\\n  b', "a=1\\\n b", "a b\\\n  ; c",
    "a b\\\n  # c\n d", "x=$(a b\\\n c)", "a $(b)\\\n c", "a `b`\\\n c", "a > f\\\n  b",
    "a b\\\n  && c", "a 'b'\\\n c", "if a; then\n  b c\\\n    d\nfi", "a b\\\n \\\n c",
    "export X=1\\\n  Y=2", "arr=(a b)\\\n c", "a b\\\n  >x", "a b\\\n\t\n c",
    # `|&`
    "a b |& tee log", "( a ) |& tee x", "a |&\n b", "x=$(a |& b)", "a |& b &", "a |& b && c",
    "for i in 1; do a; done |& tee l", "a|&b", "a |&& b", "a | & b",
    # `&>`/`&>>` after a word, `>& N` with a blank, a redirection right after a word
    "echo a &>> log", "a&>f b", "a &> /dev/null && b", "a 2>& 1 &", "a >& 1", "a 2>& -",
    "a >& f", "a &>#c", "a >#c", "tr 'a' 'b'> f", "echo $x>f", 'echo "a"<f', "cat<<<x",
    "echo a2>f", "echo a<b>c", "echo a>&2", "echo ${x}>>f", "exec {fd}>f", 'echo "a"2>f',
    "cat<<EOF\nx\nEOF", "x=$(a<f) y=`b>g`", "echo a>f<g", "a >2>f", "a <<<x2>&1", "a <<<2>&1",
    "echo a<(b)", "a >(b)", "if a; then b>f; fi", "for x in a>b; do c; done", "[[ a<b ]]",
    "echo $((1<2))>f", "arr=(a<b)", "mapfile -t A < <(ls)", "cat<<EOF | a>f\nx\nEOF",
    # `NAME=` after a redirection, `[[` as an argument, a tilde prefix holding a substitution
    "> f X=1 cmd", "X=1 > f Y=2 c", "> f cmd X=1", "<<<x X=1", "echo [[ 2 ]]", "a [[\nb",
    "cd ~$(whoami)/x", "echo ~`d`", "echo ~/$(b)", "echo a~$(b)", "X=~$(a)",
    # `$(…)` and backquotes inside single quotes (bashlex reads them as code unless the word
    # starts and ends with a single quote, and then reads no command in it at all)
    "bash -c 'echo $(hostname)'", "awk -F/ '{print $(NF-1)}'", "echo '`x`' '$(y)z'",
    "echo 'a'$(x)'b'", "echo '$(x)'1", "X='$(a)'", "echo 'a'\"$(x)\"'b'", "echo \"a\"'$(x)'",
    "srun -N1 bash -c 'a $(b)' &", "echo 'a'`b`'c' d", "x=$(echo '$(a)')", "echo '$(a'",
    "f() { bash -c 'x $(y)'; }", "echo 'a'b'$(x)'", "echo '$(x)''b'",
    # `$$(`, comments right after `;` or `&`, until
    "a $$(b)", 'echo $$ "$$" $$x', "a;#b c", "a &#b", "a; # b", "a;#", "for x in 1 2;# 3\ndo a; done",
    "until a; do b; done 2>&1 | tee log", "until [ -f x ]; do sleep 5; done", "until a\ndo b; done",
    "until a $(b); do c & done", "a;&>f b", "a; &>f b",
    # backslashes inside backquotes (bash removes one before `$`, a backquote or a backslash)
    "X=`expr $a \\* $b`", 'echo `sed -e "s/\\..*$//g" f` x', "echo `a \\\\ b`", "echo `a \\$b`",
    "echo `ls raw/SRR*\\.fq | head -1` x", "n=`grep -c -e ' \\(pass\\|FAIL\\) ' $f`",
    "echo `a\\`", "echo `a \\` b`",
    # an array element as an argument (`ray[all]==2`: a word both ways) or as the command
    "pip install ray[default]==2.1 && b", "unset a[-1] x", "opt[0]=\"a b\"", "a[1]=x y",
    "A=1 a[1]=x", "declare -A m\nm[$k]=v", "export a[1]=x", "a[1]+=(x)",
    # substitutions after a backslash-newline inside double quotes: bashlex drops the pairs
    # before it places them
    'export CMD=" \\\n    `pwd`/x.py \\\n    --tp $TP \\\n    "',
    'export CMD=" \\\n    $(pwd)/x.py \\\n  $(a b) \\\n "', 'echo "\\\n  $(a) \\\n $(b)" $(c)',
    'echo "\\\n $(X=1 a)"', 'echo "\\\n  $(a[1]=2 b)"', 'echo "\\\n  $(> f a)"', 'x="\\\n"`a`"\\\n"$(b)',
    'echo "a\\\\\n $(b)"', '"\\\n$(a)"', 'echo "\\\n$(a)" "$(b)"',
    # here-documents inside compound commands: bashlex reads the next line as commands and
    # the body from the line after it, unless a token follows the delimiter on its line
    "if a; then\n  cat <<EOF\nx $(a) y\nb c\nEOF\nfi", "f() {\n  cat <<EOF\nNAME\n  $0 -- x\nEOF\n}",
    "if a; then\n  cat <<EOF >f\nx\nEOF\nfi", "if a; then\n  cat <<EOF # c\nx\nb\nEOF\nfi",
    "if a; then\n  cat <<EOF\n\nb\nEOF\nfi", "if a; then\n  cat <<EOF\n# x\nb\nEOF\nfi",
    "if a; then\n  cat <<EOF | b\nx\nEOF\nfi", "f() {\n  cat <<EOF\nEOF\nEOF\n}",
    "f() {\n  cat <<EOF\nx\n}", "{ cat <<EOF\nx\ny\nEOF\n}", "(cat <<EOF\nx\ny\nEOF\n)",
    "for i in 1; do\n  a <<A <<B\nx\nA\ny\nB\ndone", "if a; then\n  cat <<EOF\nx $((1))\ny\nEOF\nfi",
    "if a; then\n  cat <<EOF\nx 'y\nz'\nw\nEOF\nfi", "if a; then\n  cat <<EOF\nx &&\ny\nw\nEOF\nfi",
    "if a; then\n  cat <<-EOF\n\tx\n\ty\n\tEOF\nfi", "while a; do\n  cat <<EOF; b\nx\nEOF\ndone",
    "if a; then\n  cat <<EOF\nfi\nEOF\nfi", "f() {\n  cat <<EOF\nx\ny \\\nEOF\nEOF\n}",
    # here-document bodies: bashlex drops every backslash-newline before it compares a line
    "cat <<EOF # c\nv \\\nEOF", "cat <<EOF\nv \\\nEOF\nEOF\nb", "cat <<EOF\nEO\\\nF\nx",
    "cat <<EOF\n\\\nEOF\nEOF\n", "cat <<EOF\na\\\\\nEOF\nEOF\n", "cat <<EOF\nx\\",
    # `$(…)` and backquotes inside single quotes of a word that does not start with one:
    # bashlex reads them as code
    "declare -a A='\n  --x=$N\n  --y=$(hostname)\n'", "NODES=' $( scontrol show hostnames $L ) '",
    "X=a'$(b c)'d", "X='$(a)'\"$(b)\"", "X=a'`b`'", "X=a'${b}$(c)'", "X=a'$b$1$$(c)'",
    "X=a'$$$(b)'", "X=a'$-$(b)$'", "X=a'\\$(b)'", "X=a'\\'$(b)", "X=a'$(b; c)'", "X=a'$(b | c)'",
    "X=a'$(b && c)'", "X=a'$((1))$(b)'", "X=a'$(b $(c))'", "X=a'<(b)$(c)'", "X=a'$(b'", "X=a'$[1]'",
    "X=a'$(b \"c\")'", "X=a'\"$(b)\"'", "X=\"'\"'$(b)'", "x=$(echo a'$(b)')", "X=a'$(case)'",
    "X=a'${b'}$(c)", "X=~'$(a)'", "[[ a'$(b)' ]]", "X=a'$(b)'\\\n  c", 'X="\\\n"\'$(a)\'',
    # process substitutions (the model takes no command from them), nested ${…}, $'…'
    'mapfile -t X < <(a "$Y")', "diff <(a) <(b 'c')", "a <(b && c)", "a <(b $(c))", "a >(b) c",
    "a <(b)c", "a <(b) | c <(d)", "a 2< <(b)", "a <(b;c)", "a <( b | c )", "a < <(b $((1)))",
    "a <()", "a <(b\n c)", "a <(b) >(c) &", "x=$(a <(b))", "a <(b # c\n)", "a <(case x in y) z;; esac)",
    'X="${A:-${B:+${B}/d}}" $(c)', "C=${C:-${D:-1}} $(e)", 'C=${C:-"a:$B"} $(e)',
    ': "${S:=${T-$R}}" $(e)', "C=${C:-${D:-$(a)}}", "C=${C:-${D:-}} `a`", 'C=${C:-${D:-"x"}} `a`',
    'C="${C:-${D}}x}" $(a)', 'C=${C:-"$"} $(a)', "C=${C#${D%/*}} $(a)", "C=${C:-${D:-${E:-1}}} $(a)",
    "echo $'a\\tb' $(c)", "echo $'a\\'b' $(c)", "x=$'a'\"$(b)\"", "echo 'T'$'\\t' $(c)",
    "echo -n 'a'$'\\t'\"$X\"$'\\n'", "echo $'$(a)'", "echo $'a\\\\' $(b)", "echo $'\\n' $(b)",
    # a while/until whose condition is one pipeline then a newline: bashlex fails on it
    "while [ 1 ]\ndo\n  a $(b)\ndone", "while a && b\ndo\n d\ndone", "while a | b\ndo\n d\ndone",
    "while a &\ndo\n d\ndone", "while a\n b\ndo\n d\ndone", "while\n a\ndo\n d\ndone",
    "while a # c\ndo\n d\ndone", "while a\n\ndo\n d\ndone", "while ! a\ndo d\ndone",
    "if a; then while a\ndo d; done; fi", "while a\ndo while b\ndo c\ndone\ndone", "until a\ndo d; done",
    "while a\ndo d; done\nwhile a; do b; done", "until a; do d; done\nwhile b\ndo c; done",
    "x=$(while a\ndo b; done)", "while [ 1 ]\ndo\n a\ndone > f", "x=$((1))\nwhile a\ndo b; done",
    "while a\ndo [[ -n $x ]]; done", "while a\ndo b $(c && d); done", "while a\ndo\n b\ndone &",
    "until a\ndo while b\ndo c; done; done", "while a\ndo b; done; a <(b && c)",
    # a redirection with no target on the first line: bashlex fails on the newline token
    "conda activate <env>", "a > # c", "a > # c\nb", "a >\nb", "a > \n", "X=<a> # c\nb",
    "a\nb <x>", "if a; then b >\nfi", "a <x> | b", "a 2>", "a >>", "a <<<", "a >& ", "x $(a) >",
    "a >#c", "a $((1)) >", "x=$(a >)", "a `b >`", "a $(b) > # c", "while a\ndo b; done >",
    "a <x>\nwhile a\ndo b; done", "a 'b\nc' >", "a &> ", "a < <(b) >", "f() { a >\n}",
    "x=$((1)) > #c", "a [[ > ", "cat <<EOF >\nx\nEOF",
    # backslash-newlines between the words inside $(…): bashlex drops them before it places
    # the commands
    "X=$(a \\\n b)", "X=$(a | \\\n b)", "X=$(a \\\n b \\\n c) d", 'X="\\\n$(a \\\n b)"',
    "X=$(a \\\n Y=1 b)", "X=$(a \\\n > f b)", "X=$(a\\\n b)", "X=$(a \\\n b) $(c \\\n d)",
    "X=`a \\\n b`", 'X=$(a "x\\\n" \\\n b)', "X=$(a 'x\\\n' \\\n b)", "X=$(a \\\n b) `c`",
    "X=$(a \\\n b)`c`$(d)", "X=$(a \\\n b; c \\\n d)", "X=$(a \\\n)", "X=$(\\\n a)",
    "X=$(a \\\n | b)", "X=$(a \\\n && b)", "X=$(a \\\n b[1]=c)", "X=$(a \\\n <(b) c)",
    # redirections alone make a command; quotes in a quoted operand
    "> $d/mp.log 2>&1", "> f", "a; > f; b", "2>&1 > f | a", "x=$(> f)", "<<<x", "> f &", "> f X=1",
    "cat <<EOF\nx\nEOF\n<<EOF\ny\nEOF", "f() { > f; }", "> $(a) b", "2>&1", "! > f",
    'M="${1:-\'Q/w\'}" $(a)', ': "${N:=""}" $(a)', ': "${N:="a"}" $(a)', 'a "${N:-""x}" $(b)',
    "x=a$'b'$(c)", "echo $'`a`' $(b)", "echo $'${a}' $(b)", "echo $'a\nb' $(c)", 'echo $"a" $(b)',
    # an array element assigned as the command: a word to bashlex (its name), also after `NAME=`
    "X=1 a[1]=2 cmd", "a[1]=2 cmd x", "pids[${r}]=$!", 'A["j"]="$2"; shift',
    "a[x y]=1", "a[1]+=x", "a[$(b)]=c", "a[1]=$(b)", "X=$(a[1]=b)", "a[1]=(x)", "a[1]", "é[1]=2",
    "> f a[1]=2", "a[1]=2 > f", "if a; then b[1]=2; fi", "a[1]=2 &", "A[1]=x; ${A[1]} y",
    # backslashes in a parameter's operand (bashlex's tokenizer skips each pair)
    'sed "s/P/${P//\\//\\\\/}/g" $(a)', "sed s/P/${P//\\//\\\\/}/g $(a)", "a ${6#\\'} $(b)",
    "a ${i/\\.bam/} $(b)", "a ${C:\\U\\G} $(b)", "a ${X:-\\}} $(b)", 'a "${X:-\\}}" $(b)',
    "a ${X:-\\$(c)} $(b)", "a ${X:-\\`c\\`} $(b)", 'a "${X:-\\"}" $(b)', "a ${X:-a\\\\} $(b)",
    "a ${X:-\\\n} $(b)", "a ${X:-\\", 'a "${X:-\\$Y}" $(b)', "a ${X:-\\ b} $(c)", "a ${X:-\\'b'} $(c)",
    "a ${X:-${Y:-\\/}} $(b)", "a ${X%\\}*} $(b)", "a ${X:-\\{} $(b)", "a ${X:-'\\'} $(b)",
    "a ${X:-\\}$(c)} $(b)",
    # a newline after `|` inside a process substitution (no command of it is in the model)
    "c <(a |\n  b |\n c) x", "c <(a |\n\n b) x", "c <(a |\n # z\n b) x", "c <(a | # z\n b) x",
    "c <(a |\\\n b) x", "c <(a |\n) x", "c <(a |\n b\n c) x", "a <(b |\n c) <(d |\n e) > f",
    "c >(a |\n b) x", "c <(a |\n $(b)) x", "c <(a |\n b) && d", "X=$(c <(a |\n b))", "X=$(a |\n b)",
    "c <(a |\n b)x", "c <(a |\n b;) x", "c <(a |\n b &) x", "c <(a |\n if b; then c; fi) x",
    "c <(a |\n 'b\n') x", "c <(a |\n b <<EOF\nx\nEOF\n) y",
    # `;` before the `)` of a substitution: bashlex fails there (not in a subshell or backquotes)
    "X=$(a;)", "X=$(a; )", 'X="$(a;)"', "c <(a;) x", "c <(a ;) x", "X=$(a; b)", "(a;)", "X=`a;`",
]

#: chunks read by the fast path only behind the masks (bashlex reads the masked text)
MASKED = ['case "$1" in\n  a) b ;;\nesac', "if (( N > 1 )); then a; fi", "time srun x",
          "if [[ a && b ]]; then c; fi", "for ((i=0; i<3; i++)); do a; done"]


def differences(text: str) -> tuple[int, int, list[str]]:
    """(chunks, chunks the fast path read, texts of those whose model differs from bashlex's)."""
    script = parse(TextMap(text))
    plain = text.replace("\r", " ")
    accepted, differing = 0, []
    for ch in script.chunks:
        chunk = plain[ch.start:ch.end]
        if ch.parser != "simple":
            # (a chunk the fast path says bashlex refuses: bashlex raises that very error)
            reading = read_chunk(chunk)
            if reading.commands is None and reading.parse_error != \
                    read_chunk(chunk, read_simple=False).parse_error:
                differing.append(chunk)
            continue
        accepted += 1
        mine, theirs = parse(TextMap(chunk)), parse(TextMap(chunk), read_simple=False)
        if [c.parser for c in theirs.chunks] != ["bashlex"] * len(theirs.chunks) or \
                model_key(mine) != model_key(theirs):
            differing.append(chunk)
    return len(script.chunks), accepted, differing


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_chunks(text):
    assert differences(text)[2] == []


def test_the_fast_path_reads_the_common_forms_and_leaves_the_rest():
    for text in ["srun --ntasks=2 \\\n  python train.py", "cd x && make || echo failed",
                 "a | b &", "NODES=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\")",
                 "echo \"$(date)\"", "a &&\n  b", "if [ -f x ]; then a; else b; fi",
                 "for x in a b; do c; done", "while a; do b; done < f", "f() { a; }",
                 "[[ -n $X ]] && a", "PORT=$((1 + 2))", 'X="a \\" b"', "arr=(a b)",
                 'srun "${ARGS[@]}"', 'read -r a <<< "$X"', "X=`date`", "! a && b",
                 "echo 'multi\nline'", "function f { a; }", "echo {}", "cat <<EOF\nx\nEOF",
                 "if a; then b\nelif c; then d\nelif e; then f\nfi", "( cd x && make ) &",
                 "find . -exec rm {} \\;", "srun \\\n  python x.py\\\n  --lr 1",
                 "a |& tee log", "echo a>b", "cat<<<x", "a &>> log", "a 2>& 1",
                 "bash -c 'echo $(hostname)'", "until a; do b; done", "X=`expr $a \\* $b`",
                 "X='$(a)'", "f() {\n  cat <<EOF\nx\ny\nEOF\n}", "x=$(a \\\n b)", 'X="\\\n$(a)"', "pip i ray[x]",
                 "a < <(b)", "C=${C:-${D:-1}}", "echo $'\\t'", 'opt[0]="a b"',
                 "X=1 a[1]=$! cmd"]:
        assert fast.read(text) is not None, text
    for text in ["echo `a $(b)`", "echo $(a &)", "echo $( )",
                 "a && ", "a |&& b", "echo x\\\ny", "f() {\n  cat <<EOF\nEOF\n}",
                 "time srun x", "a >2>f", "a >#c", "a &>#c", "echo a<(b)",
                 "> f X=1 cmd", "echo [[ 2 ]]", "cd ~$(whoami)/x", "echo 'a'$(x)'b'",
                 "echo '$(x)'1", "X=a'$[1]'", "a $$(b)", "a;#b c", "a &#b", "a;&>f b",
                 "echo `a \\$b`", "echo `a \\\\ b`", "a <(b && c)",
                 "arr=($(ls))", "echo ${X:-$(date)}", "echo $(a # c\n)",
                 "echo $(\n a\n b\n)", "X=$(a $(b))", "(a) b", "x=$( (a) )"]:
        assert fast.read(text) is None, text


@pytest.mark.parametrize("text", MASKED)
def test_masked_chunks_are_read_fast(text):
    assert fast.read(text) is None
    assert [c.parser for c in parse(TextMap(text)).chunks] == ["simple"]
    assert differences(text)[2] == []


def test_a_here_document_in_a_chunk_longer_than_bashlex_reads_stays_with_tree_sitter():
    text = "cat <<EOF\n" + "line\n" * (MAX_BASHLEX_CHUNK // 5) + "EOF"
    assert fast.read(text) is not None
    assert [c.parser for c in parse(TextMap(text)).chunks] == ["tree-sitter"]


def test_background_and_substitution_flags():
    reading = fast.read("a $(b) | c &\nd")
    assert reading is not None
    text = "a $(b) | c &\nd"
    assert [(text[c.tokens[0].start:c.tokens[-1].end], c.in_substitution, c.background)
            for c in reading.commands] == [("a $(b)", False, True), ("b", True, True),
                                   ("c", False, True), ("d", False, False)]


def test_a_chunk_bashlex_refuses_goes_to_tree_sitter_without_it():
    text = "while [ 1 ]\ndo\n  a\ndone"
    reading = fast.read(text)
    assert reading is not None and reading.refusal == "AssertionError: token = {while}"
    assert read_chunk.__wrapped__(text) == read_chunk.__wrapped__(text, read_simple=False)
    assert [c.parser for c in parse(TextMap(text)).chunks] == ["tree-sitter"]


def test_functions():
    text = "f() {\n  srun x\n}"
    reading = fast.read(text)
    assert reading is not None
    assert reading.functions == (("f", 0, len(text)),)
    assert [c.function for c in reading.commands] == ["f"]


@pytest.mark.parametrize("text", sample_scripts())
def test_page_examples_and_cases(text):
    assert differences(text)[2] == []


def test_generated_corpus():
    differing = [d for _, data in sbatch_corpus.cases()
                 for d in differences(data.decode("utf-8", "replace"))[2]]
    assert differing == []


def test_real_corpus():
    """Off unless CORPUS_DIR names a folder of real job scripts (never committed)."""
    chunks = accepted = 0
    differing: dict[str, list[str]] = {}
    for name, text in real_corpus():
        n, k, diff = differences(text)
        chunks, accepted = chunks + n, accepted + k
        if diff:
            differing[name] = diff
    print(f"fast path: {accepted}/{chunks} chunks; files differing: {len(differing)}")
    assert differing == {}


# ---- one-line simple commands (fast._one_command) against the whole reader (fast.read_any) ----
#: pieces of one-line chunks: plain words, blanks, quotes, expansions, operators, reserved words
ONE_LINE_ATOMS = ["a", "srun", "X=1", "A[1]=", " ", "\t", "'", '"', "$", "$X", "${X}", "${X:-y}",
                  "$(", "$((", ")", "(", "`", "\\", "#", ";", "&", "|", ">", "<", "[[", "]]",
                  "{", "}", "!", "time", "if", "then", "fi", "in", "do", "~", "=", "-", "é",
                  "$'", '$"', "$$", "$1", "\n", "*", "[", "]", ":"]
ONE_LINE = ["srun python train.py --lr 1e-4", 'cd "$WORK/${RUN}"', "export X=1", "  a  b  ",
            "X=1", "X=1 Y=2 cmd", "time a", "X=1 if", "X=1 {", "! a", "{ a", "} a", "a }",
            "echo '$X' x", "echo '$(a)' x", "echo 'a$[1]'", "a [[ b", "[[ a ]]", "echo $(a)",
            'echo "$"', 'echo "$$" $$', "echo $1 $@ $# $? $-", 'a "${X}"y"$Z"', "a ${X:-y}",
            "function f", "in a", "done", "a\tb", "é=1 x", "1=a b", "echo ~ ~/x", "a #b",
            "a# b", "echo {} \\;", "echo $'a'", 'echo $"a"', "echo a\n", "echo 'a", 'echo "a',
            # operands and comments
            "a ${X:-1} ${#Y} ${Z#*/} b", 'a "${X:-1}/x" $1', "a ${X:-$Y}", 'a "${X:-a b}"', "a # c",
            "a b  # c 'd' $(e) `f` ; g", "a #", "a#b # c", "a '#' # c", 'a "#" # c', "a ${X#b} #c",
            "X=1 # c", "time # c", "a ${X%%#*}# c", "\t a\t#\tc"]


def _same_reading(text: str) -> bool:
    return fast.read(text) == fast.read_any(text)


@pytest.mark.parametrize("text", ONE_LINE + TRICKY)
def test_one_line_commands_read_as_the_whole_reader_reads_them(text):
    assert _same_reading(text)


def test_the_one_line_shortcut_reads_the_common_lines():
    taken = [t for t in ONE_LINE if fast._ONE_COMMAND.fullmatch(t) and "[[" not in t
             and fast._one_command(t, len(t)) is not None]
    assert 10 < len(taken) < len(ONE_LINE) - 10


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(ONE_LINE_ATOMS), min_size=1, max_size=12).map("".join))
def test_one_line_commands_read_as_the_whole_reader_reads_them_on_random_lines(text):
    assert _same_reading(text), text


def test_one_line_commands_read_as_the_whole_reader_reads_them_in_the_scripts():
    texts = [p.values[0] for p in sample_scripts()] + [text for _, text in real_corpus()]
    chunks = {text[ch.start:ch.end].replace("\r", " ") for text in texts
              for ch in parse(TextMap(text)).chunks}
    assert [c for c in chunks if not _same_reading(c)] == []


def test_tokens_and_commands_built_from_tuples_are_the_named_tuples():
    """``fast._new_token``/``_new_command`` (``tuple.__new__`` without the NamedTuple's
    ``__new__``) build what the classes build, given every field."""
    token = fast._new_token((1, 2, True, False))
    assert type(token) is fast.Token and token == fast.Token(1, 2, True)
    assert (token.start, token.end, token.redirect, token.heredoc) == (1, 2, True, False)
    command = fast._new_command(((token,), True, False, None, ()))
    assert type(command) is fast.Command and command == fast.Command((token,), True, False)
    assert command.function is None and command.heredocs == ()
    assert len(fast.Token._fields) == 4 and len(fast.Command._fields) == 5


# ---- `!` after `&&`/`||` (bashlex reads it, as at the start of a list; `a | ! b` it refuses) ----
BANG_AFTER_AND_OR = ["a && ! b", "a || ! b c", "a && \\\n  ! b", "a &&\n ! b", "a | ! b",
                     "a && ! b | c", "a && ! b &", "a && ! ! b", "x && ! $(c) d", "a && !",
                     "a && ! ;", "a && ! b && ! c || d", "X=$(a && ! b)", "a && ! { b; }",
                     "a && ! ( b )", "a && ! if a; then b; fi", "a && ! [[ x ]]",
                     "a && !  X=1 b", "a && ! > f b", "for x in a; do a && ! b; done",
                     "a && !\tb", "a || ! b; ! c && ! d\n", "a |\n ! b", "a && ! b |& c",
                     "if [ ! -e x && \\\n    ! -e y ]; then\n  a\nelse\n  b\nfi"]


def test_bang_after_and_or_is_read_fast():
    for text in ["a && ! b", "a || ! b c", "a && \\\n  ! b", "x && ! $(c) d",
                 "if [ ! -e x && \\\n    ! -e y ]; then\n  a\nfi"]:
        assert fast.read(text) is not None, text
    for text in ["a | ! b", "a && ! ! b", "a && !"]:
        assert fast.read(text) is None, text


def _assert_read_as_bashlex(texts: list[str], fast_at_least: int) -> None:
    """No text of ``texts`` reads differently from bashlex, and more than ``fast_at_least`` of
    them are read fast (the generator reaches the shape under test)."""
    assert [t for t in texts if differences(t)[2]] == []
    assert sum(fast.read(t) is not None for t in texts) > fast_at_least


def _random_lists(seed: int, count: int, atoms: list[str], joins: list[str]) -> list[str]:
    """``count`` chunks of one to six ``atoms`` with one of ``joins`` between each two, seeded."""
    import random
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        text = rng.choice(atoms)
        for _ in range(rng.randint(0, 5)):
            text += rng.choice(joins) + rng.choice(atoms)
        texts.append(text)
    return texts


def test_bang_after_and_or_on_random_lists():
    texts = _random_lists(15, 600, ["a", "! b", "!  c d", "! { f; }", "! $(g)", "X=1 h",
                                    "! X=1 i", "[ ! -e x ]", "if a; then ! b; fi", "! ! e", "!",
                                    "! j &"],
                          [" && ", " || ", " | ", "; ", " &&\n ", " || \\\n ", "\n"])
    differing = [t for t in texts if differences(t)[2]]
    assert differing == []
    bang_after = re.compile(r"(?:&&|\|\|)\s*(?:\\\n\s*)?!")
    assert sum(fast.read(t) is not None and bang_after.search(t) is not None
               for t in texts) > 60


# ---- a here-document inside `$(…)` at the top level (`X=$(cat <<EOF` newline … `EOF` newline `)`)
SUBSTITUTION_HEREDOCS = [
    "X=$(cat <<EOF\nbody\nEOF\n)", "X=$(cat <<EOF\nbody $(x) `y`\nEOF\n)",
    "X=$(cat <<EOF\na && b || c\nEOF\n)", "X=$(cat <<EOF\nbody\nEOF\n) && y",
    "X=$(cat <<EOF\nbody\nEOF\n) z", "X=$(cat <<EOF\nbody\nEOF\n)\necho $X",
    "X=$(cat <<EOF\nbody\nEOF\n  )", "X=$(cat <<EOF\nbody\nEOF\n\n)",
    "X=$(cat <<EOF\nbody\nEOF\necho hi\n)", "X=$(cat <<EOF\nbody\nEOF)",
    "X=$(cat <<EOF | tr a b\nbody\nEOF\n)", "X=$(cat <<EOF && echo x\nbody\nEOF\n)",
    "X=$(cat <<EOF ; echo x\nbody\nEOF\n)", "X=$(cat <<- EOF\n\tbody\n\tEOF\n)",
    "X=$(cat <<EOF <<END\na\nEOF\nb\nEND\n)",
    'X=$(python3 - << PY \nimport os\nprint(os.environ["A"])\nPY\n)',
    "X=$(python3 - <<'PY'\nimport os\nprint(\"$(a)\")\nPY\n)",
    "for x in a b; do\n  X=$(cat <<EOF\nbody $x\nEOF\n)\n  echo \"$X\"\ndone",
    "if a; then\n  X=$(cat <<EOF\nbody\nEOF\n)\nfi", "f() {\n  X=$(cat <<EOF\nbody\nEOF\n)\n}",
    'echo "$(cat <<EOF\nbody\nEOF\n)"', 'X="\\\n$(cat <<EOF\nbody\nEOF\n)"',
    "X=$(a $(cat <<EOF\nbody\nEOF\n))", "X=$(cat <<EOF\nbody\nEOF\n) Y=$(cat <<END\nb2\nEND\n)",
    "X=$(cat <<EOF\nbody\nEOF\n)$(cat <<END\nb2\nEND\n)", "cat <<A; X=$(cat <<EOF\nbody\nEOF\n)\na\nA",
    "cat <<A $(cat <<EOF\nb\nEOF\n)\na\nA", 'cat <<A x"$(cat <<EOF\nb\nEOF\n)"\na\nA',
    "X=$(cat <<EOF\nb\nEOF\n) cat <<A\na\nA", "X=$(cat <<EOF\nb\nEOF\n) <<A cat\na\nA",
    "X=$(cat <<EOF\nbody \\\nEOF\nEOF\n)", "X=$(cat <<EOF\na \\\nb \\\nc\nEOF\n)",
    "X=$(cat <<EOF # c\nbody\nEOF\n)", "X=$(cat <<EOF\nbody\nEOF\n)\ncat <<B\nx\nB",
    'X=$(cat <<"EOF"\nbody\nEOF\n)', 'srun bash -c "$(cat <<EOF\na\nEOF\n)" &',
    "X=$(cat <<EOF\nEOF\n)", "X=$(cat 2>&1 <<EOF\nbody\nEOF\n)", "X=$(<<EOF cat\nbody\nEOF\n)",
    "X=$(<<EOF\nbody\nEOF\n)", "X=$(cat <<EOF\nbody $((1+2)) ${A:-b}\nEOF\n)",
    "for x in $(cat <<EOF\na b\nEOF\n); do echo $x; done", "X=$(cat <<EOF\nX=(a b)\nEOF\n)",
    "X=$(cat <<EOF\nbody\nEOF\n)\nY=$(cat <<EOF\nbody\nEOF\n)\n", "X=`cat <<EOF\nb\nEOF\n`",
    "a <(cat <<EOF\nb\nEOF\n) c", "X=$(cat <<EOF\ntime while case [[ (( <<<\nEOF\n)"]


def test_here_documents_in_substitutions_are_read_fast():
    for text in ["X=$(cat <<EOF\nbody\nEOF\n)", 'echo "$(cat <<EOF\nbody\nEOF\n)"',
                 'X=$(python3 - << PY \nimport os\nprint(os.environ["A"])\nPY\n)',
                 "X=$(cat <<EOF\nbody\nEOF\n) Y=$(cat <<END\nb2\nEND\n)"]:
        assert fast.read(text) is not None, text
    for text in ["X=$(cat <<EOF\nbody $(x)\nEOF\n)", "X=$(cat <<EOF\nbody\nEOF\necho hi\n)",
                 "X=$(cat <<EOF\na \\\nb \\\nc\nEOF\n)", "if a; then\n  X=$(cat <<EOF\nb\nEOF\n)\nfi",
                 "X=$(<<EOF\nbody\nEOF\n)", "X=$(cat <<- EOF\n\tbody\n\tEOF\n)"]:
        assert fast.read(text) is None, text


def _substitution_heredoc(rng) -> str:
    """A random chunk holding a here-document inside ``$(…)`` (mostly the top-level shape)."""
    delim = rng.choice(["EOF", "END", "PY"])
    op = rng.choice(["<<", "<< ", "<<", "<<-", "<<'", '<<"'])
    quote = {"<<'": "'", '<<"': '"'}.get(op, "")
    command = rng.choice(["cat ", "python3 - ", "cat 2>&1 ", "srun -N1 bash ", ""])
    tail = rng.choice(["", "", "", " | tr a b", " && echo x", "; echo y", " # c", " $(z)",
                       " <<X"])
    lines = [rng.choice(["body", "a b $A ${B:-c}", "x && y", "print('a')", "\tbody", "",
                         delim + " ", "\t" + delim, "import time", "while a", "do", "case x in",
                         "X=(a b)", "[[ a ]]", "cat <<Y", "$(x)", "`y`", "a \\", "$((1+2))"])
             for _ in range(rng.randint(0, 4))]
    body = "\n".join(lines + [delim] + (["q", "X"] if tail == " <<X" else []))
    close = rng.choice([")", ")", ")", ") && y", ")\necho $X", "  )", ") z", ")\n", ")\n\n"])
    head = rng.choice(["X=", "echo ", 'X="', 'srun bash -c "', "A=1 B=", "for x in "])
    text = head + "$(" + command + op + delim + quote + tail + "\n" + body + "\n" + close
    if head.endswith('"'):
        text = text.replace("\n" + close, "\n" + close + '"', 1)
    if head == "for x in ":
        text += "; do echo $x; done"
    wrap = rng.choice(["%s"] * 6 + ["if a; then\n  %s\nfi", "for i in 1; do\n%s\ndone",
                                    "f() {\n%s\n}", "while read l; do\n%s\ndone < f"])
    return wrap % text


def test_here_documents_in_substitutions_on_random_chunks():
    import random
    rng = random.Random(8)
    texts = [_substitution_heredoc(rng) for _ in range(800)]
    _assert_read_as_bashlex(texts, 50)


# ---- the line after a here-document's operator inside a compound command, which bashlex reads as
# commands (fast._Reader._waits): read unless the masks may rewrite it (fast._masked_as_code)
WAITING_LINES = [
    'if a; then\n  tee -a log <<EOF\n### Starting timestamp (s): $(date +%s)\nbody\nEOF\nfi',
    'if a; then\n\tIFS=\'\' read -r -d \'\' m <<EOF\nYour rclone configuration is missing a "$remote_name" remote.  Until the remote is set up.\nEOF\nfi',
    'f() {\n\tread -r m <<-EOF\n\tThere was a problem. This program will not work until the problem is fixed.\n\tEOF\n}',
    'if a; then\n  cat <<EOF\nwhile true\ndo\nEOF\nfi',
    'if a; then\n  cat <<EOF\ndo x\nEOF\nfi',
    'while a\ndo\n  cat <<EOF\n  do\nb\nEOF\ndone',
    'if a; then\n  cat <<EOF\nx $(a && b)\nEOF\nfi',
    'if a; then\n  cat <<EOF\nx $((1+2))\nEOF\nfi',
    'if a; then\n  cat <<EOF\n[[ a ]]\nEOF\nfi',
    'if a; then\n  cat <<EOF\nA=(1 2)\nEOF\nfi',
    'if a; then\n  cat <<EOF\ntime x\nEOF\nfi',
    'if a; then\n  cat <<EOF\necho time case select coproc\nEOF\nfi',
    'if a; then\n  cat <<EOF\ncase x in\na) b;;\nesac\nEOF\nfi',
    "if a; then\n  cat <<EOF\ncat <<'X'\nEOF\nfi",
    'if a; then\n  cat <<EOF\nx $(a) `b` ${c:-d} | e; f & g\nEOF\nfi',
    'if a; then\n  cat <<EOF\nx $(a $(b))\nEOF\nfi',
    'if a; then\n  cat <<EOF\nuntil x; do y; done\nEOF\nfi',
    'if a; then\n  cat <<EOF\nwhile x\n  do\nEOF\nfi',
    'for i in 1; do\n  cat <<EOF\nthe time has come, until\ndome\nEOF\ndone',
    "for i in 1; do\n  cat <<EOF\ncan't stop\nEOF\ndone",
    'for i in 1; do\n  cat <<EOF\na = b ( c )\nEOF\ndone',
    'for i in 1; do\n  cat <<EOF\nx $[1+2]\nEOF\ndone',
    'for i in 1; do\n  cat <<EOF\nx $(select)\nEOF\ndone',
    'for i in 1; do\n  cat <<EOF\nx || y\nEOF\ndone',
    'for i in 1; do\n  cat <<EOF\nx \\\ny\nEOF\ndone',
    'for i in 1; do\n  cat <<EOF\nEOF\ndone\n',
]


def test_lines_read_before_a_waiting_body_are_read_fast():
    assert [fast.read(t) is not None for t in WAITING_LINES[:3]] == [True] * 3
    assert fast.read(WAITING_LINES[3]) is None  # (`while` and a `do` line: rewritten)


def test_lines_read_before_a_waiting_body_on_random_chunks():
    import random
    rng = random.Random(5)
    pieces = ["echo", "x", "time", "until", "while", "do", "done", "case", "select", "$(a)",
              "$(a && b)", "$((1))", "$[1]", "[[", "]]", "A=(1)", "<<'X'", "`b`", "${c:-d}",
              "|", ";", "&", "&&", "||", "#", "(", ")", "'", '"', "\\", "can't", "EOF"]
    texts = []
    for _ in range(600):
        lines = [" ".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
                 for _ in range(rng.randint(1, 3))]
        head, foot = rng.choice([("if a; then\n", "\nfi"), ("for i in 1; do\n", "\ndone"),
                                 ("f() {\n", "\n}"), ("while a\ndo\n", "\ndone")])
        op = rng.choice(["<<EOF", "<<-EOF", "<< EOF", "<<EOF # c"])
        texts.append(head + "  cat " + op + "\n" + "\n".join(lines) + "\nEOF" + foot)
    _assert_read_as_bashlex(texts, 40)


# ---- a function's span ends at its closing brace or last redirection, not after the blanks or
# comment that follow (fast._Reader._plain_redirects; before, ``f() { b; } # c`` differed)
FUNCTION_ENDS = [
    'f() { b; } ; g',
    'f() { b; }  \ng',
    'f() { b; } > log ; g',
    'f() { b; }  > log  ; g',
    'f() { b; } # c',
    'f() { b; } &',
    'function f { b; }\t# c',
    'f() {\n  b\n}  > log 2>&1   # c\ng',
    'if a; then b; fi  # c',
    'f() { b; } \\\n  > log',
    '( a )  ; b',
    '{ a; }  2>&1  | b',
]


def test_function_spans_on_random_chunks():
    import random
    rng = random.Random(3)
    texts = [rng.choice(["f() { a; }", "function f {\n  a\n}", "f() ( a )", "{ a; }", "(a)",
                         "if a; then b; fi"])
             + rng.choice(["", " ", "  > log", " 2>&1 >f ", "\t"])
             + rng.choice(["", " # c", " ; g", "\ng", " | h", " && i", " &"])
             for _ in range(300)]
    _assert_read_as_bashlex(texts, 150)


# ---- `&` after a pipeline in a list that holds `&&`/`||` (bashlex marks the last pipeline)
BACKGROUND_AND_OR = [
    'a && b\nc &',
    'a && b; c &',
    'a && b &',
    'a & b && c',
    'a || b\n(c d) &',
    'f() {\n  a && b\n  (c) &\n}',
    'if a; then b && c; fi\nd &',
    'a && b\nc & d && e',
    'a && b\nc | d &\ne',
    'a &&\nb\nc &',
    'x=1 && y=2\n{ a; } &',
    'a && { b & }',
    'a && { b; } &',
    'a | b && c\nd | e &',
    'a && b\nc &\nd && e &',
    'a && b <<EOF\nx\nEOF\nc &',
    'while a && b; do c & done',
    'a && b\nc & wait\n',
    'a && b | c &',
    'a | b && c | d &',
    'a && b || c &',
    'a && (b; c) &',
    'if a; then b && c & fi',
    'a && b & c || d &',
    'a && f() { b; } &',
    'a && b $(c) &',
    'a &&\n b &',
]


def test_background_in_and_or_lists_on_random_lists():
    texts = _random_lists(21, 800, ["a", "b c", "(d)", "{ e; }", "f | g", "x=1", "h() { i; }",
                                    "if h; then i & fi", "j &", "k && l &", "! m", "n $(o)"],
                          [" && ", " || ", "; ", "\n", " & ", " &\n", " | "])
    assert [t for t in texts if differences(t)[2]] == []
    readings = [fast.read(t) for t in texts if "&&" in t or "||" in t]
    assert sum(r is not None and any(c.background for c in r.commands) for r in readings) > 100


@pytest.mark.parametrize("text", BANG_AFTER_AND_OR + SUBSTITUTION_HEREDOCS + WAITING_LINES
                         + FUNCTION_ENDS + BACKGROUND_AND_OR)
def test_the_shapes_added_in_session_15_read_as_bashlex_reads_them(text):
    assert differences(text)[2] == []


def test_function_ends_and_background_in_and_or_lists_are_read_fast():
    assert [t for t in FUNCTION_ENDS + BACKGROUND_AND_OR if fast.read(t) is None] == []

"""The reports' stylesheet (inlined in every file: no external resources)."""

CSS = """
:root{--fg:#1d1d1f;--muted:#5f6368;--line:#d9d9de;--accent:#b36b00;--accent-bg:#fff4dc;--good:#1e7b34;
--bad:#b3261e;--mark:#ffe08a;--panel:#f7f7f9}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);margin:0;padding:1.5rem 2rem;
line-height:1.45;max-width:90rem}
h1{font-size:1.6rem;margin:.2rem 0 .4rem}h2{font-size:1.25rem;margin:2rem 0 .6rem;border-bottom:2px solid var(--line);
padding-bottom:.2rem}h3{font-size:1.05rem;margin:1.2rem 0 .4rem}
nav.reports{font-size:.9rem;margin-bottom:1rem;color:var(--muted)}nav.reports a{color:var(--accent)}
nav.reports [aria-current]{font-weight:600;color:var(--fg)}
.meta,.note{color:var(--muted);font-size:.88rem}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.88rem}
th,td{border:1px solid var(--line);padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:var(--panel);font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.best td{background:var(--accent-bg)}.ci{color:var(--muted);font-size:.8em;display:block}
.fail,.bad{color:var(--bad)}.good{color:var(--good)}
.recommendation{border-left:5px solid var(--accent);background:var(--accent-bg);padding:.8rem 1rem;margin:1rem 0;
border-radius:4px}
.recommendation p{margin:.3rem 0}
.kpis{display:flex;flex-wrap:wrap;gap:.6rem;margin:.6rem 0}
.kpi{border:1px solid var(--line);border-radius:6px;padding:.5rem .8rem;min-width:9rem;background:#fff}
.kpi .label{font-size:.78rem;color:var(--muted);text-transform:uppercase;letter-spacing:.03em}
.kpi .value{font-size:1.4rem;font-weight:600;font-variant-numeric:tabular-nums}
.plot{max-width:100%;height:auto;border:1px solid var(--line);border-radius:4px;background:#fff}
figure{margin:.5rem 0 1.5rem}figcaption{font-size:.85rem;color:var(--muted)}
.strategy p{margin:.3rem 0 .9rem}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .8rem;font-size:.85rem;margin:.4rem 0}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;word-break:break-all}
details{margin:.4rem 0}summary{cursor:pointer}
.badge{display:inline-block;border-radius:9px;padding:0 .45rem;font-size:.78rem;background:#e8eaed;color:#333;
font-variant-numeric:tabular-nums;margin-left:.3rem;white-space:nowrap}
.badge.on{background:#dbe9ff;color:#0b3d91}
.warning{border-left:5px solid var(--bad);background:#fdecea;padding:.6rem 1rem;margin:.8rem 0;border-radius:4px}
.warning[hidden]{display:none}
.scope{border:2px solid var(--accent);border-radius:6px;padding:.4rem 1rem;margin:.8rem 0;background:#fafafa}.scope p{margin:.3rem 0}.scope .warning{margin:.3rem 0}
button{font:inherit}
:focus-visible{outline:3px solid #1a73e8;outline-offset:1px}
mark{background:var(--mark);padding:0;border-bottom:2px solid #d4a000}
.scroll{overflow-x:auto}
.sig{font-weight:600}
"""

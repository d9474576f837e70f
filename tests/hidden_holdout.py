# ruff: noqa   (the tester's code, kept as written: one-line statements, short names)
"""Three hidden sites of shapes skitter's own (tests/forms_sim.py, the demo's) do not have, for the
--forms crawl: written by a hold-out tester on 2026-11-29 (stop 33), on which the default crawl
reached 0 % of two sites' records. Kept as the tester wrote them, but for the server: each app is
served by :class:`HiddenSite` on loopback, and its requests are logged in ``app[LOG]``.

- A: a tool catalogue, 420 records. The home page links to /search (a text box q and a select of
  departments, action /find); every word must match; 10 results a page with "next" links, 60 at
  most; an empty q gives "Please enter at least one keyword". Records at /item/<id>.
- B: a herbarium, 300 records. The form on the home page: <input type=search placeholder> and a
  required hidden sig (a 400 without it); at most 20 results in a <table>, no paging; "No matches".
- C: recipes, 520 records. The form on / has action /results (15 a page, 75 at most); every page
  also has a POST newsletter sign-up, a GET log-in with a password box and a GET "Rate this" form,
  none of which may be sent.
"""

from __future__ import annotations

import html
import random

from aiohttp import web

LOG = web.AppKey("log", list)   # the requests an app served: (method, path with query)

W_TOOLS = """hammer chisel wrench spanner pliers saw hacksaw drill bit router sander plane file rasp clamp vice
mallet crowbar level square ruler tape measure caliper gauge socket ratchet driver screwdriver torx hex
allen key nail screw bolt nut washer rivet anchor hinge bracket brace dowel glue resin epoxy varnish
lacquer stain primer paint brush roller tray ladder scaffold bench workbench toolbox cabinet drawer
shelf rack hook peg board plywood timber oak beech walnut pine cedar maple birch ash cherry teak
steel iron brass copper bronze aluminium titanium chrome nickel zinc carbide diamond tungsten ceramic
rubber leather canvas nylon cotton wool felt cork foam plastic acrylic glass mirror lens lamp torch
battery charger cordless corded electric pneumatic hydraulic manual heavy light compact portable
industrial vintage antique forged polished brushed matte glossy rustproof waterproof insulated
magnetic precision adjustable folding telescopic ergonomic padded reinforced hardened tempered
carpenter joiner mason plumber welder roofer glazier blacksmith cooper turner carver sculptor
garden lawn hedge pruner shears trowel spade shovel fork rake hoe barrow hose sprinkler nozzle
valve pipe fitting coupling elbow tee flange gasket seal washer tap faucet drain trap siphon
grinder polisher buffer jigsaw bandsaw lathe mitre bevel chamfer mortise tenon dovetail rebate
groove flute bead cove ogee profile template jig fence guide rail track sled stop block""".split()
W_PLANTS = """fern moss lichen sedge rush grass reed clover vetch thistle nettle dock sorrel mallow campion
orchid lily iris tulip crocus daffodil snowdrop bluebell primrose cowslip violet pansy poppy buttercup
daisy aster chicory dandelion hawkweed yarrow tansy wormwood mugwort chamomile feverfew valerian
foxglove mullein speedwell figwort plantain bedstraw madder teasel scabious knapweed cornflower
harebell bellflower rampion lobelia gentian centaury bogbean comfrey borage forget alkanet bugloss
heliotrope lavender rosemary thyme sage mint marjoram oregano basil hyssop betony selfheal bugle
woundwort deadnettle horehound catmint skullcap germander heather heath ling bilberry cranberry
cowberry bearberry crowberry willow sallow osier poplar aspen alder birch hazel hornbeam beech oak
chestnut elm lime sycamore maple holly ivy mistletoe yew juniper pine spruce larch fir cedar
hawthorn blackthorn rowan whitebeam service apple pear plum cherry bramble raspberry dewberry
strawberry cinquefoil tormentil avens meadowsweet agrimony burnet lady mantle saxifrage stonecrop
houseleek sundew butterwort bladderwort waterlily pondweed duckweed arrowhead watercress brooklime
marsh bog fen meadow pasture woodland hedgerow verge cliff dune shingle saltmarsh heathland moor
upland lowland limestone chalk granite sandstone clay peat loam acid alkaline damp shady sunny
collected pressed mounted annotated specimen sheet label voucher duplicate holotype isotype
flowering fruiting seedling rosette creeping climbing trailing upright downy hairy glabrous waxy
spotted striped variegated fragrant bitter aromatic toxic medicinal edible rare common endemic""".split()
W_FOOD = """onion garlic shallot leek carrot parsnip turnip swede beetroot potato celery fennel cabbage
kale spinach chard lettuce rocket watercress cucumber courgette marrow pumpkin squash aubergine pepper
chilli tomato mushroom truffle pea bean lentil chickpea rice barley oat wheat rye spelt quinoa noodle
pasta spaghetti macaroni lasagne ravioli gnocchi risotto polenta couscous bread loaf roll bun bagel
brioche croissant scone muffin pancake crepe waffle biscuit cookie cake tart pie crumble pudding
custard jelly mousse souffle meringue trifle sorbet icecream chocolate caramel toffee fudge honey
syrup treacle sugar butter cream cheese yogurt milk egg chicken duck goose turkey pheasant beef lamb
mutton pork bacon ham sausage venison rabbit salmon trout cod haddock mackerel herring sardine
anchovy tuna prawn shrimp crab lobster mussel oyster clam scallop squid octopus lemon lime orange
grapefruit apple pear plum peach apricot cherry grape raisin fig date banana mango pineapple melon
strawberry raspberry blackberry blueberry gooseberry currant rhubarb almond walnut hazelnut pecan
pistachio cashew peanut coconut sesame poppy cumin coriander cardamom cinnamon clove nutmeg ginger
turmeric saffron paprika vanilla thyme rosemary parsley basil dill tarragon sage mint bay oregano
roast bake grill fry poach steam braise stew simmer boil sear smoke cure pickle ferment marinate
stuffed glazed spiced smoked creamy crispy tender spicy tangy zesty rustic hearty summer winter
autumn spring festive sunday supper breakfast brunch lunch picnic starter soup salad sauce gravy
chutney relish pickle jam marmalade curry tagine paella casserole hotpot goulash chowder broth""".split()

def zipf_pick(rng, words, k):
    out = set()
    while len(out) < k:
        i = min(int(rng.paretovariate(0.9)) - 1, len(words) - 1)
        # shuffle rank per site
        out.add(words[(i * 7919) % len(words)] if rng.random() < 0.5 else rng.choice(words))
    return list(out)

def make(words, n, seed, cats):
    rng = random.Random(seed)
    recs = []
    for i in range(n):
        title = " ".join(w.capitalize() for w in zipf_pick(rng, words, rng.randint(2, 4)))
        desc = " ".join(zipf_pick(rng, words, rng.randint(8, 25)))
        rid = rng.randint(1000, 99999) * 10 + i % 10  # non-sequential ids
        recs.append(dict(id=f"{rid}-{i}", title=title, desc=desc, cat=rng.choice(cats)))
    return recs

def toks(r): return set((r["title"] + " " + r["desc"]).lower().split())

CATS_A = ["hand-tools", "power-tools", "fixings", "finishes", "garden", "plumbing", "timber", "storage"]
A = make(W_TOOLS, 420, 11, CATS_A)
B = make(W_PLANTS, 300, 22, ["x"])
C = make(W_FOOD, 520, 33, ["x"])
SIG = "7f3c9e"

@web.middleware
async def logmw(request, handler):
    """Every request, as (method, path with query): the tests check what was never sent."""
    request.app[LOG].append((request.method, request.path_qs))
    return await handler(request)

def page(title, body, extra=""):
    return web.Response(text=f"<!doctype html><html><head><title>{html.escape(title)}</title></head><body>{extra}<h1>{html.escape(title)}</h1>{body}</body></html>", content_type="text/html")

# ---------------- Site A
def a_app():
    app = web.Application(middlewares=[logmw]); app[LOG] = []; r = app.router
    byid = {x["id"]: x for x in A}
    async def home(req):
        return page("Brightwell Tool Catalogue", "<p>Hand tools, power tools, fixings, timber and garden kit for the carpenter, joiner, plumber and mason. Chisels, planes, drills, clamps and more from oak workbenches to brass hinges.</p><p><a href='/search'>Search the catalogue</a> | <a href='/about'>About us</a></p>")
    async def about(req):
        return page("About Brightwell", "<p>Family business since 1952. Forged steel, polished brass, hardened carbide.</p><a href='/'>Home</a>")
    opts = "".join(f"<option value='{c}'>{c.replace('-', ' ').title()}</option>" for c in CATS_A)
    async def search(req):
        return page("Search the catalogue", f"<form action='/find' method='get'><label for=q>Keywords</label> <input type=text name=q id=q> <select name=cat><option value='' selected>All departments</option>{opts}</select> <input type=submit value='Search'></form><a href='/'>Home</a>")
    async def find(req):
        q = req.query.get("q", "").strip().lower(); cat = req.query.get("cat", "")
        try: p = max(1, int(req.query.get("p", "1")))
        except ValueError: p = 1
        if not q:
            return page("Search", "<p>Please enter at least one keyword.</p><a href='/search'>Back to search</a>")
        terms = q.split()
        hits = [x for x in A if all(t in toks(x) for t in terms) and (not cat or x["cat"] == cat)]
        hits = hits[:60]  # only first 60 shown (6 pages)
        pg = hits[(p - 1) * 10: p * 10]
        rows = "".join(f"<li><a href='/item/{x['id']}'>{html.escape(x['title'])}</a> — {x['cat']}</li>" for x in pg)
        nav = ""
        if p * 10 < len(hits):
            from urllib.parse import urlencode
            nav = f"<a href='/find?{urlencode(dict(q=q, cat=cat, p=p + 1))}'>next</a>"
        body = f"<p>{len(hits)} results for <b>{html.escape(q)}</b></p><ul>{rows}</ul>{nav}" if hits else f"<p>Sorry, nothing found for {html.escape(q)}.</p>"
        return page(f"Results page {p}", body + " <a href='/search'>New search</a>")
    async def item(req):
        x = byid.get(req.match_info["id"])
        if not x: raise web.HTTPNotFound()
        return page(x["title"], f"<p>{html.escape(x['desc'])}</p><p>Department: {x['cat']}</p><a href='/search'>Search again</a>")
    r.add_get("/", home); r.add_get("/about", about); r.add_get("/search", search); r.add_get("/find", find); r.add_get("/item/{id}", item)
    return app

# ---------------- Site B
def b_app():
    app = web.Application(middlewares=[logmw]); app[LOG] = []; r = app.router
    byid = {x["id"]: x for x in B}
    form = f"<form action='/lookup' method='get' class='finder'><input type=search name=term placeholder='Search the herbarium, e.g. orchid'><input type=hidden name=sig value='{SIG}'><button>Go</button></form>"
    async def home(req):
        return page("Wyndham Herbarium", "<p>Pressed and mounted specimens of meadow, woodland, heathland and saltmarsh flora: orchids, ferns, sedges, mosses and flowering herbs collected on chalk and limestone.</p>" + form + "<p><a href='/visit'>Visiting</a></p>")
    async def visit(req):
        return page("Visiting", "<p>Open weekdays. Specimen sheets by appointment.</p><a href='/'>Home</a>")
    async def lookup(req):
        if req.query.get("sig") != SIG:
            return web.Response(status=400, text="bad request: missing signature")
        q = req.query.get("term", "").strip().lower()
        hits = [x for x in B if q and any(t in toks(x) for t in q.split())][:20]
        if not hits:
            return page("Lookup", "<p>No matches</p>" + form)
        rows = "".join(f"<tr><td><a href='/specimen/{x['id']}'>{html.escape(x['title'])}</a></td><td>{html.escape(' '.join(x['desc'].split()[:5]))}</td></tr>" for x in hits)
        return page("Lookup", f"<table><tr><th>Name</th><th>Notes</th></tr>{rows}</table>" + form)
    async def spec(req):
        x = byid.get(req.match_info["id"])
        if not x: raise web.HTTPNotFound()
        return page(x["title"], f"<p>{html.escape(x['desc'])}</p><a href='/'>Herbarium home</a>")
    r.add_get("/", home); r.add_get("/visit", visit); r.add_get("/lookup", lookup); r.add_get("/specimen/{id}", spec)
    return app

# ---------------- Site C
def c_app():
    app = web.Application(middlewares=[logmw]); app[LOG] = []; r = app.router
    byid = {x["id"]: x for x in C}
    noise = ("<div class=top><form action='/signup' method='post' id='news'><h3>Get our weekly recipes</h3><input name=addr><button>Send me recipes</button></form>"
             "<form action='/account/enter' method='get'><input name=username><input type=password name=pw><button>Sign in</button></form></div>")
    search = "<form action='/results' method='get'><input name=q size=30> <input type=submit value='Find recipes'></form>"
    def rate(path):
        return f"<form action='/rate' method='get'><input type=hidden name=page value='{html.escape(path)}'><select name=stars><option>1</option><option>2</option><option>3</option><option>4</option><option>5</option></select><button>Rate this</button></form>"
    def cpage(req, title, body):
        return page(title, body + rate(req.path), extra=noise + search)
    async def home(req):
        return cpage(req, "Hearth & Harvest Recipes", "<p>Seasonal cooking: roast lamb with rosemary, spiced pumpkin soup, smoked mackerel salad, rhubarb crumble and hearty winter stews.</p><a href='/about'>About</a>")
    async def about(req):
        return cpage(req, "About", "<p>Tested in a small kitchen.</p><a href='/'>Home</a>")
    async def results(req):
        q = req.query.get("q", "").strip().lower()
        try: p = max(1, int(req.query.get("page", "1")))
        except ValueError: p = 1
        hits = [x for x in C if q and any(t in toks(x) for t in q.split())][:75]
        pg = hits[(p - 1) * 15: p * 15]
        lis = "".join(f"<li><a href='/recipe/{x['id']}'>{html.escape(x['title'])}</a></li>" for x in pg)
        from urllib.parse import urlencode
        nav = "".join(f" <a href='/results?{urlencode(dict(q=q, page=i + 1))}'>{i + 1}</a>" for i in range((len(hits) + 14) // 15) if i + 1 != p)
        body = f"<ol>{lis}</ol><p>Pages:{nav}</p>" if pg else "<p>We found no recipes.</p>"
        return cpage(req, f"Recipes matching {q}", body)
    async def recipe(req):
        x = byid.get(req.match_info["id"])
        if not x: raise web.HTTPNotFound()
        return cpage(req, x["title"], f"<p>{html.escape(x['desc'])}</p>")
    async def forbidden(req):
        return web.Response(text="recorded")
    r.add_get("/", home); r.add_get("/about", about); r.add_get("/results", results); r.add_get("/recipe/{id}", recipe)
    r.add_route("*", "/signup", forbidden); r.add_route("*", "/account/enter", forbidden); r.add_route("*", "/rate", forbidden)
    return app


SITES = {"a": (a_app, A, "item"), "b": (b_app, B, "specimen"), "c": (c_app, C, "recipe")}


def truth(name: str, base: str) -> str:
    """The site's ground truth for ``skitter eval-forms``: its records' URLs."""
    _, records, prefix = SITES[name]
    return f"# site {name}\n" + "".join(f"{base}/{prefix}/{x['id']}\n" for x in records)


class HiddenSite:
    """Site ``name``'s app on 127.0.0.1 (a free port), in a thread of its own, as a context manager."""

    def __init__(self, name: str) -> None:
        self.app = SITES[name][0]()
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> list[tuple[str, str]]:
        return self.app[LOG]

    def __enter__(self) -> "HiddenSite":
        import asyncio
        import threading

        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            runner = web.AppRunner(self.app, access_log=None)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the hidden site did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

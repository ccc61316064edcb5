import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    for r in d['results']:
        print(f.split('/')[-1], r['name'], ' '.join(f"{x['variant']}={x['tflops']:.1f}" for x in sorted(r['rows'], key=lambda x: x['variant'])))

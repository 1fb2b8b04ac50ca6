import sys,glob
d=sys.argv[1]
ev=[]
for f in sorted(glob.glob(d+'/ptr.*')):
    pid=f.split('.')[-1]
    for l in open(f):
        t,tag,a,b=l.split(); ev.append((int(t),pid,int(tag),int(a),int(b)))
ev.sort()
names={6:'ARM',0:'START',1:'TREADY',2:'WRITE',3:'IMM',4:'PREADY',5:'DONE'}
it=[];cur=[]
for e in ev:
    cur.append(e)
    if e[2]==5 and e[3]==0:
        it.append(cur);cur=[]
sel=[int(x) for x in sys.argv[2].split(',')] if len(sys.argv)>2 else range(len(it))
for i in sel:
    evs=it[i]
    lastp=max([e[0] for e in evs if e[2]==4] or [evs[0][0]])
    done=[e[0] for e in evs if e[2]==5 and e[3]==0][0]
    print('iter',i,'tail %.2f'%((done-lastp)/1000))
    for e in evs:
        print('  %9.2f %s %-6s %d %d'%((e[0]-lastp)/1000,e[1],names[e[2]],e[3],e[4]))
